package com.signoff.client;

/** Why a person rejects; required to reject, so the reasons can be counted later. */
public enum ReasonCode {
    WRONG_AMOUNT("wrong_amount"),
    WRONG_TARGET("wrong_target"),
    POLICY("policy"),
    SUSPICIOUS("suspicious"),
    OTHER("other");

    private final String wireName;

    ReasonCode(String wireName) {
        this.wireName = wireName;
    }

    /** The value in the JSON body, e.g. {@code wrong_amount}. */
    public String wireName() {
        return wireName;
    }
}
