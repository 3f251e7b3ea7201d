package com.signoff.client;

/** Waits between retries; injected so tests can record the waits instead of sleeping. */
public interface Sleeper {
    /** Thread.sleep. */
    Sleeper SYSTEM = new Sleeper() {
        @Override
        public void sleep(long millis) throws InterruptedException {
            Thread.sleep(millis);
        }
    };

    void sleep(long millis) throws InterruptedException;
}
