package com.signoff.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** What a person reads before deciding: the operation, every parameter, impact and facts. */
public final class PreviewView {
    private final String title;
    private final String description;
    private final List<PreviewField> fields;
    private final String impact;
    private final String reversibility;
    private final String externalReach;
    private final List<String> facts;

    PreviewView(Fields json) {
        this.title = json.string("title");
        this.description = json.string("description");
        List<PreviewField> read = new ArrayList<PreviewField>();
        for (Fields field : json.objects("fields")) {
            read.add(new PreviewField(field));
        }
        this.fields = Collections.unmodifiableList(read);
        this.impact = json.string("impact");
        this.reversibility = json.string("reversibility");
        this.externalReach = json.string("external_reach");
        this.facts = json.strings("facts");
    }

    public String getTitle() {
        return title;
    }

    public String getDescription() {
        return description;
    }

    public List<PreviewField> getFields() {
        return fields;
    }

    /** The field with this machine name, or null. */
    public PreviewField getField(String name) {
        for (PreviewField field : fields) {
            if (field.getName().equals(name)) {
                return field;
            }
        }
        return null;
    }

    public String getImpact() {
        return impact;
    }

    public String getReversibility() {
        return reversibility;
    }

    public String getExternalReach() {
        return externalReach;
    }

    public List<String> getFacts() {
        return facts;
    }
}
