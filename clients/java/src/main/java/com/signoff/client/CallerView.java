package com.signoff.client;

import java.util.List;

/** Who the server thinks the caller is ({@code GET /v1/whoami}). */
public final class CallerView {
    private final String subject;
    private final String tenant;
    private final List<String> roles;
    private final String actor;

    CallerView(Fields json) {
        this.subject = json.string("sub");
        this.tenant = json.string("tenant");
        this.roles = json.strings("roles");
        this.actor = json.optionalString("act");
    }

    public String getSubject() {
        return subject;
    }

    public String getTenant() {
        return tenant;
    }

    public List<String> getRoles() {
        return roles;
    }

    /** The agent acting for the subject; null for a person deciding directly. */
    public String getActor() {
        return actor;
    }
}
