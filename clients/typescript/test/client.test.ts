// The client against the real `signoff serve --demo`: what an agent and a person do, and what
// the refund provider's ledger shows afterwards. Each test refunds its own order.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AlreadyConsumed,
  ClarificationNeeded,
  Conflict,
  confirmationIdempotencyKey,
  Forbidden,
  NotFound,
  OutcomeUnknown,
  RetryPolicy,
  ServiceUnavailable,
  SignoffClient,
  SurfaceNotAllowed,
  Unprocessable,
  VersionConflict,
} from "@signoff/client";

import { FaultProxy } from "./fault-proxy.js";
import { client, env, ledgerOf, proposalsFor, recordingSleep, refund, refundedMinor } from "./live.js";

const agent = client("AGENT");
const alice = client("ALICE");

test("full flow: propose, the person's inbox, approve, token pick-up, execute once, receipt", async () => {
  const proposed = await agent.propose("refund_order", refund("ord_1001"), { rationale: "parcel never arrived" });
  assert.equal(proposed.status, "awaiting_confirmation");
  const shown = (await alice.awaitingConfirmation()).find((p) => p.proposal_id === proposed.proposal_id);
  assert.ok(shown, "the proposal is in the approver's inbox");
  assert.equal(shown.untrusted_rationale, "parcel never arrived");
  const amount = shown.preview.fields.find((field) => field.name === "amount_minor");
  assert.equal(amount?.machine_value, 19900);
  assert.equal(amount?.display_value, "¥199.00");

  const decided = await alice.approve(shown);
  assert.equal(decided.duplicate, false);
  // The decision receipt: what this decision did, and that the tool has not run yet.
  assert.deepEqual(
    [decided.status, decided.version, decided.action_id, decided.tool_status],
    ["confirmed", shown.version + 1, shown.action_id, "not_started"],
  );
  assert.match(decided.audit_id, /^acme:\d+$/);
  assert.equal(decided.proposal.status, "confirmed");
  assert.equal(decided.idempotencyKey, await confirmationIdempotencyKey(shown.proposal_id, shown.version));
  assert.equal(decided.proposal.approvals[0]?.approver, "alice");

  const { confirmation_token } = await agent.confirmationToken(shown.proposal_id);
  const outcome = await agent.execute(shown.proposal_id, confirmation_token);
  assert.equal(outcome.accepted, false);
  assert.equal(outcome.duplicate, false);
  assert.equal(outcome.execution.status, "succeeded");
  assert.equal(outcome.receipt?.status, "succeeded");
  assert.deepEqual(outcome.receipt?.approvers, ["alice"]);
  assert.equal(outcome.receipt?.args_digest, shown.args_digest);
  assert.equal(typeof outcome.signed_receipt, "string");

  const ledger = await ledgerOf("ord_1001");
  assert.equal(ledger.length, 1);
  assert.equal(ledger[0]?.amount_minor, 19900);
  assert.equal(ledger[0]?.request_key, outcome.execution.request_key);
  assert.equal(await refundedMinor("ord_1001"), 19900);
  const status = await agent.execution(outcome.execution.execution_id);
  assert.equal(status.receipt?.provider_reference, ledger[0]?.reference);
  assert.equal((await agent.proposal(shown.proposal_id)).status, "succeeded");
  // A replay of the decision answers the same receipt; the tool has run meanwhile.
  const replayed = await alice.approve(shown);
  assert.deepEqual(
    [replayed.duplicate, replayed.audit_id, replayed.status, replayed.version, replayed.tool_status],
    [true, decided.audit_id, "confirmed", decided.version, "succeeded"],
  );
});

test("a decision whose answer was lost is sent again with the same key and answered duplicate: true", async () => {
  const shown = await alice.proposal((await agent.propose("refund_order", refund("ord_1002"))).proposal_id);
  const key = await confirmationIdempotencyKey(shown.proposal_id, shown.version);
  const proxy = new FaultProxy(env("SIGNOFF_URL"), "hold");
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_ALICE"), timeoutMs: 1000, sleep });

    const decided = await viaProxy.approve(shown);

    assert.equal(decided.duplicate, true, "the retry got the first decision back");
    // Usually two requests; on a slow machine the retry may meet the first still in flight
    // (409 idempotency_key_in_flight) and wait once more — always under the same key.
    assert.ok(proxy.seen.length >= 2);
    for (const seen of proxy.seen) assert.deepEqual([seen.method, seen.idempotencyKey], ["POST", key]);
    assert.equal(waits[0], 250);
    const now = await alice.proposal(shown.proposal_id);
    assert.equal(now.approvals.length, 1, "one decision recorded");
    assert.equal(decided.proposal.version, now.version);
    assert.equal(decided.proposal.action_id, now.action_id);
    assert.equal(decided.proposal.status, "confirmed");
    // Sent once more, later: the same first answer.
    const again = await alice.approve(shown);
    assert.equal(again.duplicate, true);
    assert.deepEqual(again.proposal.approvals, decided.proposal.approvals);
  } finally {
    await proxy.close();
  }
  const { confirmation_token } = await agent.confirmationToken(shown.proposal_id);
  await agent.execute(shown.proposal_id, confirmation_token);
  assert.equal((await ledgerOf("ord_1002")).length, 1);
});

test("503 with Retry-After: one wait of exactly that long, the same key, one decision", async () => {
  const shown = await alice.proposal((await agent.propose("refund_order", refund("ord_1003"))).proposal_id);
  const proxy = new FaultProxy(env("SIGNOFF_URL"), { status503: 2 });
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_ALICE"), sleep });
    const decided = await viaProxy.approve(shown);
    assert.equal(decided.duplicate, false);
    assert.deepEqual(waits, [2000]);
    assert.equal(proxy.seen.length, 2);
    assert.equal(proxy.seen[0]?.idempotencyKey, proxy.seen[1]?.idempotencyKey);
  } finally {
    await proxy.close();
  }
  assert.equal((await alice.proposal(shown.proposal_id)).approvals.length, 1);
});

test("a Retry-After beyond the policy is thrown with the key, and decided nothing", async () => {
  const shown = await alice.proposal((await agent.propose("refund_order", refund("ord_1008"))).proposal_id);
  const proxy = new FaultProxy(env("SIGNOFF_URL"), { status503: 60 });
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_ALICE"), sleep });
    const busy = await viaProxy.approve(shown).then(
      () => assert.fail("no decision expected"),
      (error: unknown) => error,
    );
    assert.ok(busy instanceof ServiceUnavailable);
    assert.equal(busy.code, "unavailable");
    assert.equal(busy.idempotencyKey, await confirmationIdempotencyKey(shown.proposal_id, 1));
    assert.deepEqual(waits, []);
    assert.equal(proxy.seen.length, 1);
  } finally {
    await proxy.close();
  }
  assert.equal((await alice.proposal(shown.proposal_id)).status, "awaiting_confirmation");
});

test("a key still in flight is asked again after the backoff", async () => {
  const shown = await alice.proposal((await agent.propose("refund_order", refund("ord_1009"))).proposal_id);
  const proxy = new FaultProxy(env("SIGNOFF_URL"), "in_flight");
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_ALICE"), sleep });
    assert.equal((await viaProxy.approve(shown)).proposal.status, "confirmed");
    assert.deepEqual(waits, [250]);
  } finally {
    await proxy.close();
  }
});

test("stale views: another approver decided first (invalid_state), a version it is not at (version_conflict)", async () => {
  const aliceSaw = await alice.proposal((await agent.propose("refund_order", refund("ord_1004"))).proposal_id);
  const bob = client("BOB");
  const bobSaw = await bob.proposal(aliceSaw.proposal_id);
  await alice.approve(aliceSaw);

  await assert.rejects(bob.approve(bobSaw), (error: unknown) => error instanceof Conflict && error.code === "invalid_state");

  const other = await alice.proposal((await agent.propose("refund_order", refund("ord_1004", 100))).proposal_id);
  await assert.rejects(
    alice.approve({ proposal_id: other.proposal_id, version: other.version + 1 }),
    (error: unknown) => error instanceof VersionConflict && error.status === 409,
  );
  assert.equal((await alice.proposal(other.proposal_id)).status, "awaiting_confirmation");
  // Approve-then-reject under one key is refused: the first decision may have landed.
  await alice.approve(other);
  await assert.rejects(
    alice.reject(other, "wrong_amount"),
    (error: unknown) => error instanceof Unprocessable && error.code === "idempotency_key_reused",
  );
});

test("another tenant's proposal is a 404, for reading and for deciding", async () => {
  const proposed = await agent.propose("refund_order", refund("ord_1005"));
  const globex = client("GLOBEX");
  await assert.rejects(globex.proposal(proposed.proposal_id), (error: unknown) => error instanceof NotFound && error.code === "not_found");
  await assert.rejects(globex.approve(proposed), (error: unknown) => error instanceof NotFound);
  assert.equal((await agent.proposal(proposed.proposal_id)).status, "awaiting_confirmation");
});

test("a replayed execute never runs twice: same key → duplicate, new key → already_consumed with the execution", async () => {
  const proposed = await agent.propose("refund_order", refund("ord_1006"));
  await alice.approve(proposed);
  const { confirmation_token } = await agent.confirmationToken(proposed.proposal_id);
  const first = await agent.execute(proposed.proposal_id, confirmation_token, { idempotencyKey: "exec-ord-1006" });

  const replay = await agent.execute(proposed.proposal_id, confirmation_token, { idempotencyKey: "exec-ord-1006" });
  assert.equal(replay.duplicate, true);
  assert.equal(replay.execution.execution_id, first.execution.execution_id);
  assert.deepEqual(replay.receipt, first.receipt);

  const consumed = await agent.execute(proposed.proposal_id, confirmation_token).then(
    () => assert.fail("a used token must be refused"),
    (error: unknown) => error,
  );
  assert.ok(consumed instanceof AlreadyConsumed);
  assert.equal(consumed.member("execution_id"), first.execution.execution_id);
  assert.equal((await ledgerOf("ord_1006")).length, 1, "one refund at the provider");
  assert.equal(await refundedMinor("ord_1006"), 19900);
});

test("an execution whose answer was lost is sent again with the same key: the first outcome, one refund", async () => {
  const proposed = await agent.propose("refund_order", refund("ord_1011"));
  await alice.approve(proposed);
  const { confirmation_token } = await agent.confirmationToken(proposed.proposal_id);
  const proxy = new FaultProxy(env("SIGNOFF_URL"), "hold");
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_AGENT"), timeoutMs: 1000, sleep });
    const outcome = await viaProxy.execute(proposed.proposal_id, confirmation_token);
    assert.equal(outcome.duplicate, true, "the retry got the first outcome");
    assert.equal(outcome.execution.status, "succeeded");
    assert.ok(proxy.seen.length >= 2);
    for (const seen of proxy.seen) assert.equal(seen.idempotencyKey, outcome.idempotencyKey);
    assert.equal(waits[0], 250);
  } finally {
    await proxy.close();
  }
  assert.equal((await ledgerOf("ord_1011")).length, 1, "one refund at the provider");
});

test("a proposal whose answer was lost is never sent again: OutcomeUnknown, one request, one proposal", async () => {
  const proxy = new FaultProxy(env("SIGNOFF_URL"), "hold");
  const { waits, sleep } = recordingSleep();
  try {
    const viaProxy = new SignoffClient({ baseUrl: await proxy.start(), token: env("SIGNOFF_TOKEN_AGENT"), timeoutMs: 500, sleep });
    const lost = await viaProxy.propose("refund_order", refund("ord_1007")).then(
      () => assert.fail("the answer was held back"),
      (error: unknown) => error,
    );
    assert.ok(lost instanceof OutcomeUnknown);
    assert.equal(lost.code, "no_answer");
    assert.equal(lost.status, 0);
    assert.equal(proxy.seen.length, 1, "never retried");
    assert.deepEqual(waits, []);
  } finally {
    await proxy.close();
  }
  // The held request reached signoff; on a slow machine it may still be finishing.
  let found = await proposalsFor("ord_1007");
  for (let tries = 0; found.length === 0 && tries < 100; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    found = await proposalsFor("ord_1007");
  }
  assert.equal(found.length, 1, "the lost answer's proposal exists once");
});

test("refusals that change nothing: a question, an agent deciding, a surface not allowed, a rejection", async () => {
  await assert.rejects(
    agent.propose("refund_order", { order_id: "ord_1010", amount_minor: 199, currency: null, reason: null }),
    (error: unknown) => error instanceof ClarificationNeeded && error.field === "currency",
  );
  assert.equal((await proposalsFor("ord_1010")).length, 0, "a question creates nothing");

  const proposed = await agent.propose("refund_order", refund("ord_1010"));
  await assert.rejects(agent.approve(proposed), (error: unknown) => error instanceof Forbidden && error.code === "separation_of_duties");
  await assert.rejects(client("ALICE_OTHER_APP").approve(proposed), (error: unknown) => error instanceof SurfaceNotAllowed);

  const rejected = await alice.reject(proposed, "wrong_amount", { reason: "the customer asked for ¥99.00" });
  assert.equal(rejected.proposal.status, "declined");
  assert.equal(rejected.proposal.approvals[0]?.reason_code, "wrong_amount");
  await assert.rejects(agent.confirmationToken(proposed.proposal_id), Conflict);
  assert.equal((await ledgerOf("ord_1010")).length, 0);
});

test("no answer at all on a read: retried, then OutcomeUnknown", async () => {
  const { waits, sleep } = recordingSleep();
  const dead = new SignoffClient({ baseUrl: "http://127.0.0.1:9", token: "x", retry: new RetryPolicy({ maxAttempts: 2, initialBackoffMs: 10 }), sleep });
  await assert.rejects(dead.whoami(), (error: unknown) => error instanceof OutcomeUnknown && error.code === "no_answer");
  assert.deepEqual(waits, [10]);
});
