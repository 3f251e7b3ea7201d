package com.signoff.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The other side of the test: the support agent (u_42 via agent:support-bot) proposes a refund,
 * picks up its confirmation token once a person approved, executes, and reads the demo shop's
 * order row and the refund provider's ledger, the external side effect.
 */
final class DemoAgent {
    private final Transport http = Live.transport("agent");

    ProposalView proposeRefund(String orderId, long amountMinor) {
        Map<String, Object> arguments = new LinkedHashMap<String, Object>();
        arguments.put("order_id", orderId);
        arguments.put("amount_minor", amountMinor);
        arguments.put("currency", "CNY");
        arguments.put("reason", null);
        Map<String, Object> body = new LinkedHashMap<String, Object>();
        body.put("tool", "refund_order");
        body.put("arguments", arguments);
        body.put("rationale", "customer says the parcel never arrived");
        HttpAnswer answer = http.exchange("POST", "/v1/proposals", Json.write(body), null);
        Check.equal(201, answer.status);
        return new ProposalView(Fields.of(Json.parse(answer.body), "proposal"));
    }

    String confirmationToken(String proposalId) {
        String path = "/v1/proposals/" + proposalId + "/confirmation-token";
        return object(http.exchange("GET", path, null, null)).string("confirmation_token");
    }

    /** Executes; answers the execution object (status, request_key, ...). */
    Fields execute(String proposalId, String token) {
        Map<String, Object> body = new LinkedHashMap<String, Object>();
        body.put("proposal_id", proposalId);
        body.put("confirmation_token", token);
        String key = "exec-" + UUID.randomUUID();
        return object(http.exchange("POST", "/v1/executions", Json.write(body), key))
                .object("execution");
    }

    /** The provider's ledger entries for one order. */
    List<Fields> ledgerOf(String orderId) {
        List<Fields> found = new ArrayList<Fields>();
        for (Fields entry : object(http.exchange("GET", "/v1/demo/provider/ledger", null, null))
                .objects("entries")) {
            if (entry.string("order_id").equals(orderId)) {
                found.add(entry);
            }
        }
        return found;
    }

    long refundedMinor(String orderId) {
        return object(http.exchange("GET", "/v1/demo/orders/" + orderId, null, null))
                .integer("refunded_minor");
    }

    private static Fields object(HttpAnswer answer) {
        return Fields.of(Json.parse(answer.body), "answer");
    }
}
