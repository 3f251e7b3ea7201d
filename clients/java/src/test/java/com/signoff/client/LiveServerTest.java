package com.signoff.client;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * Against a real {@code signoff serve --demo} (started by build.sh): what a CRM user does, and
 * what the refund provider's ledger shows afterwards. Each test refunds its own order.
 */
public final class LiveServerTest {
    private final DemoAgent agent = new DemoAgent();
    private final SignoffClient alice = Live.client("alice");

    public void testApproveShowsTheFrozenValuesAndRefundsOnce() {
        ProposalView proposed = agent.proposeRefund("ord_1001", 19900);
        ProposalView shown = find(alice.listAwaitingConfirmation(), proposed.getProposalId());
        PreviewField amount = shown.getPreview().getField("amount_minor");
        Check.equal(19900L, amount.getMachineValue());
        Check.equal("¥199.00", amount.getDisplayValue());
        Check.equal("CNY", shown.getArguments().get("currency"));
        Check.equal("medium", shown.getRisk().getLevel());
        Check.equal("refund_approver", shown.getRequiredRole());
        Check.equal(1L, shown.getVersion());
        Check.equal("u_42", shown.getRequesterSubject());
        Check.equal("agent:support-bot", shown.getRequesterActor());
        Check.isTrue(shown.getExpiresAt().isAfter(shown.getCreatedAt()), "a deadline after now");

        DecisionResult result = alice.approve(shown);

        Check.equal(false, result.isDuplicate());
        Check.equal("confirmed", result.getStatus());
        Check.equal(2L, result.getVersion());
        Check.equal(DecisionResult.NOT_STARTED, result.getToolStatus());
        Check.equal(shown.getActionId(), result.getActionId());
        Check.isTrue(result.getAuditId().startsWith("acme:"), "the decision's audit event");
        Check.equal("confirmed", result.getProposal().getStatus());
        Check.equal(SignoffClient.confirmationIdempotencyKey(shown.getProposalId(), 1),
                result.getIdempotencyKey());
        Check.equal("alice", result.getProposal().getApprovals().get(0).getApprover());
        Fields execution = agent.execute(shown.getProposalId(),
                agent.confirmationToken(shown.getProposalId()));
        Check.equal("succeeded", execution.string("status"));
        List<Fields> ledger = agent.ledgerOf("ord_1001");
        Check.equal(1, ledger.size());
        Check.equal(19900L, ledger.get(0).integer("amount_minor"));
        Check.equal(execution.string("request_key"), ledger.get(0).string("request_key"));
        Check.equal(19900L, agent.refundedMinor("ord_1001"));

        DecisionResult replayed = alice.approve(shown);
        Check.equal(true, replayed.isDuplicate());
        Check.equal(result.getAuditId(), replayed.getAuditId());
        Check.equal(result.getActionId(), replayed.getActionId());
        Check.equal("confirmed", replayed.getStatus());
        Check.equal(2L, replayed.getVersion());
        Check.equal("succeeded", replayed.getToolStatus());
        Check.equal(1, agent.ledgerOf("ord_1001").size());
    }

    public void testRejectRecordsTheReasonCodeAndNeverRefunds() {
        ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1002", 19900)
                .getProposalId());

        DecisionResult result = alice.reject(shown, ReasonCode.WRONG_AMOUNT,
                "the customer asked for ¥99.00");

        Check.equal("declined", result.getStatus());
        Check.equal(DecisionResult.NOT_STARTED, result.getToolStatus());
        Check.equal("declined", result.getProposal().getStatus());
        ApprovalView decision = result.getProposal().getApprovals().get(0);
        Check.equal("reject", decision.getDecision());
        Check.equal("wrong_amount", decision.getReasonCode());
        Check.equal("the customer asked for ¥99.00", decision.getReason());
        Check.raises(ConflictException.class, new Check.Action() {
            @Override
            public void run() {
                agent.confirmationToken(shown.getProposalId());
            }
        });
        Check.equal(0, agent.ledgerOf("ord_1002").size());
        Check.equal(0L, agent.refundedMinor("ord_1002"));
    }

    public void testAnswerLostToATimeoutIsAskedAgainWithTheSameKey() throws Exception {
        ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1003", 19900)
                .getProposalId());
        String key = SignoffClient.confirmationIdempotencyKey(shown.getProposalId(), 1);
        RecordingSleeper sleeper = new RecordingSleeper();
        try (FaultProxy proxy = new FaultProxy(Live.url(), 0, FaultProxy.Fault.HOLD_ANSWER)) {
            SignoffClient viaProxy = SignoffClient.builder(proxy.url())
                    .bearerToken(Live.property("signoff.token.alice"))
                    .readTimeoutMillis(500).sleeper(sleeper).build();

            DecisionResult result = viaProxy.approve(shown);

            Check.equal(true, result.isDuplicate());
            Check.equal("confirmed", result.getStatus());
            Check.equal(2L, result.getVersion());
            List<FaultProxy.Seen> seen = proxy.requests();
            Check.equal(2, seen.size());
            for (FaultProxy.Seen request : seen) {
                Check.equal("POST", request.method);
                Check.equal(key, request.idempotencyKey);
            }
            Check.equal(Collections.singletonList(250L), sleeper.waits);
            ProposalView now = alice.getProposal(shown.getProposalId());
            Check.equal(1, now.getApprovals().size());
            Check.equal(now.getVersion(), result.getProposal().getVersion());
            Check.equal(now.getActionId(), result.getProposal().getActionId());
            Check.equal("confirmed", result.getProposal().getStatus());
        }
        agent.execute(shown.getProposalId(), agent.confirmationToken(shown.getProposalId()));
        Check.equal(1, agent.ledgerOf("ord_1003").size());
    }

    public void testUnavailableIsRetriedAfterRetryAfterWithTheSameKey() throws Exception {
        ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1004", 19900)
                .getProposalId());
        RecordingSleeper sleeper = new RecordingSleeper();
        try (FaultProxy proxy = new FaultProxy(Live.url(), 2, FaultProxy.Fault.ANSWER_503)) {
            DecisionResult result = SignoffClient.builder(proxy.url())
                    .bearerToken(Live.property("signoff.token.alice")).sleeper(sleeper).build()
                    .approve(shown);

            Check.equal(false, result.isDuplicate());
            Check.equal(Collections.singletonList(2000L), sleeper.waits);
            List<FaultProxy.Seen> seen = proxy.requests();
            Check.equal(2, seen.size());
            Check.equal(seen.get(0).idempotencyKey, seen.get(1).idempotencyKey);
        }
        Check.equal(1, alice.getProposal(shown.getProposalId()).getApprovals().size());
    }

    public void testAWaitLongerThanThePolicyAllowsIsThrownWithTheKey() throws Exception {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1011", 19900)
                .getProposalId());
        RecordingSleeper sleeper = new RecordingSleeper();
        try (FaultProxy proxy = new FaultProxy(Live.url(), 60, FaultProxy.Fault.ANSWER_503)) {
            final SignoffClient viaProxy = SignoffClient.builder(proxy.url())
                    .bearerToken(Live.property("signoff.token.alice")).sleeper(sleeper).build();

            ServiceUnavailableException busy = Check.raises(ServiceUnavailableException.class,
                    new Check.Action() {
                        @Override
                        public void run() {
                            viaProxy.approve(shown);
                        }
                    });

            Check.equal("unavailable", busy.getCode());
            Check.equal(SignoffClient.confirmationIdempotencyKey(shown.getProposalId(), 1),
                    busy.getIdempotencyKey());
            Check.equal(1, proxy.requests().size());
            Check.equal(0, sleeper.waits.size());
        }
        Check.isTrue(alice.getProposal(shown.getProposalId()).isAwaitingConfirmation(),
                "the refused attempt decided nothing");
    }

    public void testAKeyStillInFlightIsAskedAgainLater() throws Exception {
        ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1010", 19900)
                .getProposalId());
        RecordingSleeper sleeper = new RecordingSleeper();
        try (FaultProxy proxy = new FaultProxy(Live.url(), 0,
                FaultProxy.Fault.ANSWER_KEY_IN_FLIGHT)) {
            DecisionResult result = SignoffClient.builder(proxy.url())
                    .bearerToken(Live.property("signoff.token.alice")).sleeper(sleeper).build()
                    .approve(shown);

            Check.equal(false, result.isDuplicate());
            Check.equal(Collections.singletonList(250L), sleeper.waits);
            Check.equal(2, proxy.requests().size());
        }
        Check.equal("confirmed", alice.getProposal(shown.getProposalId()).getStatus());
    }

    public void testNoAnswerAtAllKeepsTheKeyAndALaterRetryGetsTheFirstDecision()
            throws Exception {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1005", 19900)
                .getProposalId());
        try (FaultProxy proxy = new FaultProxy(Live.url(), 0,
                FaultProxy.Fault.HOLD_ANSWER, FaultProxy.Fault.HOLD_ANSWER)) {
            final SignoffClient viaProxy = SignoffClient.builder(proxy.url())
                    .bearerToken(Live.property("signoff.token.alice")).readTimeoutMillis(500)
                    .retryPolicy(RetryPolicy.of(2, 10, 100)).sleeper(new RecordingSleeper())
                    .build();

            OutcomeUnknownException lost = Check.raises(OutcomeUnknownException.class,
                    new Check.Action() {
                        @Override
                        public void run() {
                            viaProxy.approve(shown);
                        }
                    });

            Check.equal("no_answer", lost.getCode());
            Check.equal(SignoffClient.confirmationIdempotencyKey(shown.getProposalId(), 1),
                    lost.getIdempotencyKey());
        }
        DecisionResult later = alice.approve(shown);
        Check.equal(true, later.isDuplicate());
        Check.equal(1, later.getProposal().getApprovals().size());
    }

    public void testDecidingAStaleViewIsAConflict() {
        final ProposalView aliceSaw = alice.getProposal(agent.proposeRefund("ord_1006", 19900)
                .getProposalId());
        final SignoffClient bob = Live.client("bob");
        final ProposalView bobSaw = bob.getProposal(aliceSaw.getProposalId());
        alice.approve(aliceSaw);

        ConflictException late = Check.raises(ConflictException.class, new Check.Action() {
            @Override
            public void run() {
                bob.approve(bobSaw);
            }
        });

        Check.equal(409, late.getStatus());
        Check.equal("invalid_state", late.getCode());
        Check.equal("alice", late.getMember("decided_by"));
        Check.equal(1, alice.getProposal(aliceSaw.getProposalId()).getApprovals().size());
    }

    public void testDecidingAVersionThatIsNotCurrentIsAVersionConflict() {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1007", 19900)
                .getProposalId());

        VersionConflictException conflict = Check.raises(VersionConflictException.class,
                new Check.Action() {
                    @Override
                    public void run() {
                        alice.decide(DecisionRequest.approve(shown.getProposalId(),
                                shown.getVersion() + 1));
                    }
                });

        Check.equal(409, conflict.getStatus());
        Check.equal("version_conflict", conflict.getCode());
        Check.equal(shown.getVersion(), conflict.getMember("current_version"));
        ProposalView still = alice.getProposal(shown.getProposalId());
        Check.isTrue(still.isAwaitingConfirmation(), "nothing was decided");
        Check.equal(0, still.getApprovals().size());
    }

    public void testAnotherTenantsProposalIsNotFound() {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1008", 19900)
                .getProposalId());
        final SignoffClient globex = Live.client("globex");

        NotFoundException read = Check.raises(NotFoundException.class, new Check.Action() {
            @Override
            public void run() {
                globex.getProposal(shown.getProposalId());
            }
        });
        NotFoundException decide = Check.raises(NotFoundException.class, new Check.Action() {
            @Override
            public void run() {
                globex.approve(shown);
            }
        });

        Check.equal("not_found", read.getCode());
        Check.equal("not_found", decide.getCode());
        for (ProposalView listed : globex.listAwaitingConfirmation()) {
            Check.notEqual(shown.getProposalId(), listed.getProposalId());
        }
        Check.equal(0, alice.getProposal(shown.getProposalId()).getApprovals().size());
    }

    public void testADecisionFromAnUnlistedClientSystemIsRefused() {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1010", 19900)
                .getProposalId());
        final SignoffClient elsewhere = Live.client("alice_other_app");

        SurfaceNotAllowedException refused = Check.raises(SurfaceNotAllowedException.class,
                new Check.Action() {
                    @Override
                    public void run() {
                        elsewhere.approve(shown);
                    }
                });

        Check.equal(403, refused.getStatus());
        Check.equal("surface_not_allowed", refused.getCode());
        Check.equal(0, alice.getProposal(shown.getProposalId()).getApprovals().size());
        Check.equal(0, agent.ledgerOf("ord_1010").size());
    }

    public void testTheInboxListsWhatThePersonMayDecideOldestDeadlineFirst() {
        String first = agent.proposeRefund("ord_1011", 19900).getProposalId();
        String second = agent.proposeRefund("ord_1012", 19900).getProposalId();
        int firstAt = -1;
        int secondAt = -1;
        List<ProposalView> inbox = alice.listAwaitingConfirmation();
        for (int i = 0; i < inbox.size(); i++) {
            if (inbox.get(i).getProposalId().equals(first)) {
                firstAt = i;
            } else if (inbox.get(i).getProposalId().equals(second)) {
                secondAt = i;
            }
        }
        Check.isTrue(firstAt >= 0 && secondAt > firstAt, "both listed, the older deadline first");
        for (ProposalView listed : Live.client("agent").listAwaitingConfirmation()) {
            Check.notEqual(first, listed.getProposalId());
        }
    }

    public void testTheAgentItselfMayNotDecide() {
        final ProposalView shown = alice.getProposal(agent.proposeRefund("ord_1009", 19900)
                .getProposalId());
        final SignoffClient asAgent = Live.client("agent");

        ForbiddenException refused = Check.raises(ForbiddenException.class, new Check.Action() {
            @Override
            public void run() {
                asAgent.approve(shown);
            }
        });

        Check.equal(403, refused.getStatus());
        Check.equal("separation_of_duties", refused.getCode());
        Check.equal(0, agent.ledgerOf("ord_1009").size());
    }

    public void testWhoAmIAndABadTokenIsNotAuthenticated() {
        CallerView me = alice.whoAmI();
        Check.equal("alice", me.getSubject());
        Check.equal("acme", me.getTenant());
        Check.equal(Arrays.asList("refund_approver"), me.getRoles());
        Check.equal(null, me.getActor());
        final SignoffClient forged = SignoffClient.builder(Live.url())
                .bearerToken("not-a-jwt").build();

        NotAuthenticatedException refused = Check.raises(NotAuthenticatedException.class,
                new Check.Action() {
                    @Override
                    public void run() {
                        forged.listAwaitingConfirmation();
                    }
                });

        Check.equal("not_authenticated", refused.getCode());
    }

    private static ProposalView find(List<ProposalView> proposals, String proposalId) {
        for (ProposalView proposal : proposals) {
            if (proposal.getProposalId().equals(proposalId)) {
                return proposal;
            }
        }
        throw new AssertionError(proposalId + " is not among " + proposals);
    }
}
