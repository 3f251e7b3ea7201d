package com.signoff.client;

import java.util.List;

/** The risk the server computed: {@code low}, {@code medium}, {@code high} or {@code critical}. */
public final class RiskView {
    private final String level;
    private final List<String> reasons;

    RiskView(Fields json) {
        this.level = json.string("level");
        this.reasons = json.strings("reasons");
    }

    public String getLevel() {
        return level;
    }

    public List<String> getReasons() {
        return reasons;
    }
}
