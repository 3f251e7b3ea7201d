package com.signoff.client;

import java.time.Clock;

/** The live server and tokens that build.sh hands the tests as system properties. */
final class Live {
    private Live() {
    }

    static String property(String name) {
        String value = System.getProperty(name);
        if (value == null || value.isEmpty()) {
            throw new IllegalStateException("-D" + name + " is not set (run clients/java/build.sh)");
        }
        return value;
    }

    static String url() {
        return property("signoff.url");
    }

    /** A client for one of the tokens build.sh minted, e.g. {@code alice}. */
    static SignoffClient client(String who) {
        return SignoffClient.builder(url()).bearerToken(property("signoff.token." + who)).build();
    }

    static Transport transport(String who) {
        final String token = property("signoff.token." + who);
        return new Transport(url(), new TokenSource() {
            @Override
            public String bearerToken() {
                return token;
            }
        }, 5000, 15000, RetryPolicy.none(), Sleeper.SYSTEM, Clock.systemUTC());
    }
}
