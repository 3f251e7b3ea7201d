package com.signoff.client;

import java.util.ArrayList;
import java.util.List;

/** Records the waits the client asks for instead of sleeping. */
final class RecordingSleeper implements Sleeper {
    final List<Long> waits = new ArrayList<Long>();

    @Override
    public synchronized void sleep(long millis) {
        waits.add(millis);
    }
}
