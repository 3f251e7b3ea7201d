package com.signoff.client;

/**
 * One parameter the executor will use: its canonical machine value (what the digest covers,
 * e.g. {@code 19900}) and its display value rendered by the server from the same snapshot
 * (e.g. {@code ¥199.00}). Show both; never parse one from the other.
 */
public final class PreviewField {
    private final String name;
    private final String label;
    private final Object machineValue;
    private final String displayValue;

    PreviewField(Fields json) {
        this.name = json.string("name");
        this.label = json.string("label");
        this.machineValue = json.raw("machine_value");
        this.displayValue = json.string("display_value");
    }

    public String getName() {
        return name;
    }

    public String getLabel() {
        return label;
    }

    /** String, Long, BigInteger, BigDecimal, Boolean, a List, a Map or null, as in the JSON. */
    public Object getMachineValue() {
        return machineValue;
    }

    public String getDisplayValue() {
        return displayValue;
    }

    @Override
    public String toString() {
        return label + ": " + displayValue + " (" + name + "=" + machineValue + ")";
    }
}
