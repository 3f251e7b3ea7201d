package com.signoff.client;

import java.io.UnsupportedEncodingException;
import java.net.URLEncoder;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * The approver's client of a signoff server, for Java 8 systems such as the seed's CRM (whose
 * client was called {@code TicketAgentClient}): list and read the proposals a person may decide,
 * then approve or reject exactly the version the person saw.
 *
 * <pre>
 * SignoffClient client = SignoffClient.builder("https://signoff.example")
 *         .tokenSource(() -&gt; currentUserJwt())   // issued to the CRM (azp jdk8-crm)
 *         .build();
 * for (ProposalView p : client.listAwaitingConfirmation()) { show(p); }
 * DecisionResult result = client.approve(client.getProposal(id));
 * </pre>
 *
 * <p>Every error is a {@link SignoffException} subclass carrying the server's {@code code}.
 * Decisions carry the key of {@link IdempotencyKeys#confirmation}; after a timeout, a lost
 * connection, a 502/503/504 or a key still in flight the same request is sent again with the
 * same key (see {@link RetryPolicy}), and the server answers the first decision again with
 * {@code duplicate: true}. Instances are immutable and safe to share between threads.
 */
public final class SignoffClient {
    private static final int INBOX_PAGE = 100;
    private final Transport transport;

    private SignoffClient(Transport transport) {
        this.transport = transport;
    }

    public static Builder builder(String baseUrl) {
        return new Builder(baseUrl);
    }

    /** The decision key for one proposal version (the seed's {@code confirmationIdempotencyKey}). */
    public static String confirmationIdempotencyKey(String proposalId, long version) {
        return IdempotencyKeys.confirmation(proposalId, version);
    }

    /** {@code GET /v1/whoami} (operation {@code whoAmI}). */
    public CallerView whoAmI() {
        return read("/v1/whoami", new Reader<CallerView>() {
            @Override
            public CallerView read(Fields json) {
                return new CallerView(json);
            }
        });
    }

    /**
     * Every proposal the caller may decide now, oldest deadline first: {@code GET /v1/inbox}
     * (operation {@code getInbox}), all pages. The server selects them by the role the person
     * holds now, so proposals filed in bulk cannot hide an older one.
     */
    public List<ProposalView> listAwaitingConfirmation() {
        final List<ProposalView> found = new ArrayList<ProposalView>();
        String after = null;
        do {
            String path = "/v1/inbox?limit=" + INBOX_PAGE;
            if (after != null) {
                path += "&after=" + encode(after);
            }
            after = read(path, new Reader<String>() {
                @Override
                public String read(Fields json) {
                    for (Fields proposal : json.objects("proposals")) {
                        found.add(new ProposalView(proposal));
                    }
                    return json.optionalString("next_after");
                }
            });
        } while (after != null);
        return Collections.unmodifiableList(found);
    }

    /** {@code GET /v1/proposals} (operation {@code listProposals}); no status means any. */
    public List<ProposalView> listProposals(List<String> statuses, int limit) {
        StringBuilder query = new StringBuilder("/v1/proposals?limit=").append(limit);
        for (String status : statuses) {
            query.append("&status=").append(encode(status));
        }
        return read(query.toString(), new Reader<List<ProposalView>>() {
            @Override
            public List<ProposalView> read(Fields json) {
                List<ProposalView> found = new ArrayList<ProposalView>();
                for (Fields proposal : json.objects("proposals")) {
                    found.add(new ProposalView(proposal));
                }
                return Collections.unmodifiableList(found);
            }
        });
    }

    /** {@code GET /v1/proposals/{id}} (operation {@code getProposal}). */
    public ProposalView getProposal(String proposalId) {
        return read("/v1/proposals/" + encode(proposalId), new Reader<ProposalView>() {
            @Override
            public ProposalView read(Fields json) {
                return new ProposalView(json);
            }
        });
    }

    /** Approve the version shown; a high-risk proposal needs {@link #approve(ProposalView, Map)}. */
    public DecisionResult approve(ProposalView proposal) {
        return decide(DecisionRequest.approve(proposal.getProposalId(), proposal.getVersion()));
    }

    /** Approve with the values the person typed again for the proposal's retype fields. */
    public DecisionResult approve(ProposalView proposal, Map<String, String> retyped) {
        return decide(DecisionRequest.approve(proposal.getProposalId(), proposal.getVersion())
                .withRetyped(retyped));
    }

    /** Reject the version shown, with a reason code and an optional text. */
    public DecisionResult reject(ProposalView proposal, ReasonCode reasonCode, String reason) {
        return decide(DecisionRequest.reject(
                proposal.getProposalId(), proposal.getVersion(), reasonCode, reason));
    }

    /** {@code POST /v1/proposals/{id}/decision} (operation {@code decideProposal}). */
    public DecisionResult decide(DecisionRequest decision) {
        final String key = decision.idempotencyKey();
        String path = "/v1/proposals/" + encode(decision.getProposalId()) + "/decision";
        HttpAnswer answer = transport.exchange("POST", path, decision.toJson(), key);
        return parse(answer, new Reader<DecisionResult>() {
            @Override
            public DecisionResult read(Fields json) {
                return new DecisionResult(json, key);
            }
        });
    }

    private <T> T read(String path, Reader<T> reader) {
        return parse(transport.exchange("GET", path, null, null), reader);
    }

    private static <T> T parse(HttpAnswer answer, Reader<T> reader) {
        try {
            return reader.read(Fields.of(Json.parse(answer.body), "answer"));
        } catch (Json.MalformedJsonException | Fields.BadView bad) {
            throw Problems.unexpected(answer, bad);
        }
    }

    static String encode(String pathSegment) {
        try {
            return URLEncoder.encode(pathSegment, "UTF-8").replace("+", "%20");
        } catch (UnsupportedEncodingException impossible) {
            throw new IllegalStateException(impossible);
        }
    }

    private interface Reader<T> {
        T read(Fields json);
    }

    /** Where the server is, whose token to send, and how patiently to wait. */
    public static final class Builder {
        private final String baseUrl;
        private TokenSource tokens;
        private int connectTimeoutMillis = 5000;
        private int readTimeoutMillis = 15000;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Sleeper sleeper = Sleeper.SYSTEM;
        private Clock clock = Clock.systemUTC();

        private Builder(String baseUrl) {
            if (baseUrl == null || !(baseUrl.startsWith("http://")
                    || baseUrl.startsWith("https://"))) {
                throw new IllegalArgumentException("the base URL must be http:// or https://");
            }
            this.baseUrl = baseUrl;
        }

        /** A fixed bearer JWT. */
        public Builder bearerToken(final String jwt) {
            return tokenSource(new TokenSource() {
                @Override
                public String bearerToken() {
                    return jwt;
                }
            });
        }

        /** The bearer JWT, asked for before every request (for tokens that are refreshed). */
        public Builder tokenSource(TokenSource source) {
            this.tokens = source;
            return this;
        }

        public Builder connectTimeoutMillis(int millis) {
            this.connectTimeoutMillis = millis;
            return this;
        }

        /** How long to wait for an answer before it counts as lost (then retried, same key). */
        public Builder readTimeoutMillis(int millis) {
            this.readTimeoutMillis = millis;
            return this;
        }

        public Builder retryPolicy(RetryPolicy policy) {
            this.retryPolicy = policy;
            return this;
        }

        /** What waits between retries; tests pass one that records the waits. */
        public Builder sleeper(Sleeper sleeper) {
            this.sleeper = sleeper;
            return this;
        }

        /** The clock an HTTP-date Retry-After is measured against. */
        public Builder clock(Clock clock) {
            this.clock = clock;
            return this;
        }

        public SignoffClient build() {
            if (tokens == null) {
                throw new IllegalStateException("set bearerToken(...) or tokenSource(...)");
            }
            return new SignoffClient(new Transport(baseUrl, tokens, connectTimeoutMillis,
                    readTimeoutMillis, retryPolicy, sleeper, clock));
        }
    }
}
