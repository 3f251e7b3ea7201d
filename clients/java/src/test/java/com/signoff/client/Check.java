package com.signoff.client;

/** The few assertions the tests need. */
final class Check {
    private Check() {
    }

    interface Action {
        void run() throws Exception;
    }

    static void equal(Object expected, Object actual) {
        if (expected == null ? actual != null : !expected.equals(actual)) {
            throw new AssertionError("expected <" + expected + "> but was <" + actual + ">");
        }
    }

    static void notEqual(Object unexpected, Object actual) {
        if (unexpected == null ? actual == null : unexpected.equals(actual)) {
            throw new AssertionError("did not expect <" + actual + ">");
        }
    }

    static void isTrue(boolean condition, String what) {
        if (!condition) {
            throw new AssertionError(what);
        }
    }

    /** Runs the action and returns what it threw, which must be a T. */
    static <T extends Throwable> T raises(Class<T> expected, Action action) {
        try {
            action.run();
        } catch (Throwable thrown) {
            if (expected.isInstance(thrown)) {
                return expected.cast(thrown);
            }
            throw new AssertionError("expected " + expected.getSimpleName() + " but got "
                    + thrown, thrown);
        }
        throw new AssertionError("expected " + expected.getSimpleName() + ", nothing thrown");
    }
}
