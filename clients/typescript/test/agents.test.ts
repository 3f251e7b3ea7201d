// The OpenAI Agents JS adapter driven by the SDK's own ScriptedModel (`@openai/agents/testing`),
// against the live server: needsApproval becomes a signoff proposal, only signoff's decision
// releases the RunState's approval, and approving in the SDK alone refunds nothing.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Agent, run, RunState, setTracingDisabled } from "@openai/agents";
import { assistantMessage, functionCall, ScriptedModel } from "@openai/agents/testing";

import { SignoffApprovals } from "@signoff/client/agents";

import { client, definitions, ledgerOf, proposalsFor, refund } from "./live.js";

setTracingDisabled(true);

const alice = client("ALICE");

/** The adapter, the SDK's scripted model (the refund call, then "done") and the agent. */
function world(orderId: string, calls = new Map<string, string>(), resumed = false) {
  const approvals = new SignoffApprovals({ client: client("AGENT"), definitions: definitions(), calls });
  const call = [functionCall("refund_order", refund(orderId), { callId: `call_${orderId}` })];
  // A run resumed from a saved state continues after the tool call: the model only answers.
  const model = new ScriptedModel(resumed ? [[assistantMessage("done")]] : [call, [assistantMessage("done")]]);
  const agent = new Agent({ name: "support", instructions: "Refund what the user asks.", model, tools: approvals.tools() });
  return { approvals, model, agent, calls };
}

/** What the tool answered the model (the function call's output in the model's next input). */
function toolOutput(model: ScriptedModel): Record<string, unknown> {
  const input = model.lastCall?.request.input;
  const items = Array.isArray(input) ? input : [];
  for (const item of items as Array<Record<string, unknown>>) {
    if (item["type"] === "function_call_result") {
      const output = item["output"] as { text?: string } | string;
      return JSON.parse(typeof output === "string" ? output : (output.text ?? "{}")) as Record<string, unknown>;
    }
  }
  throw new Error("the model was shown no tool output");
}

test("the call becomes a signoff proposal; only signoff's confirmation releases it, and it refunds once", async () => {
  const { approvals, model, agent } = world("ord_1031");
  const first = await run(agent, "Refund ord_1031");
  assert.equal(first.interruptions.length, 1);
  const [pending] = await approvals.pending(first.state);
  assert.equal(pending?.proposal.status, "awaiting_confirmation");
  assert.equal(pending?.proposal.arguments["order_id"], "ord_1031");
  assert.ok(pending?.confirmUrl.endsWith(`/ui/proposals/${pending.proposal.proposal_id}`));
  assert.equal((await approvals.release(first.state)).length, 1, "nobody decided: it still waits");
  assert.equal((await ledgerOf("ord_1031")).length, 0);

  await alice.approve(pending?.proposal as NonNullable<typeof pending>["proposal"]);
  assert.deepEqual(await approvals.release(first.state), []);
  const second = await run(agent, first.state);

  assert.equal(second.finalOutput, "done");
  model.assertComplete();
  assert.equal(model.calls.length, 2);
  const answer = toolOutput(model);
  assert.equal(answer["kind"], "execution");
  assert.equal(answer["status"], "succeeded");
  const ledger = await ledgerOf("ord_1031");
  assert.equal(ledger.length, 1);
  assert.equal(ledger[0]?.request_key, (answer["receipt"] as { request_key: string }).request_key);
  assert.equal((await proposalsFor("ord_1031")).length, 1, "resuming did not propose again");
});

test("approving in the RunState alone performs nothing: the tool answers the proposal's status", async () => {
  const { model, agent } = world("ord_1032");
  const first = await run(agent, "Refund ord_1032");
  for (const item of first.state.getInterruptions()) first.state.approve(item);

  await run(agent, first.state);

  const answer = toolOutput(model);
  assert.equal(answer["kind"], "proposal");
  assert.equal(answer["status"], "awaiting_confirmation");
  assert.match(String(answer["next_step"]), /not a confirmation/);
  assert.equal((await ledgerOf("ord_1032")).length, 0, "the SDK's approval alone refunded nothing");
  const [proposal] = await proposalsFor("ord_1032");
  assert.equal(proposal?.status, "awaiting_confirmation");
});

test("a saved RunState resumes in a fresh adapter with a shared call store, without a second proposal", async () => {
  const calls = new Map<string, string>();
  const before = world("ord_1033", calls);
  const first = await run(before.agent, "Refund ord_1033");
  const saved = first.state.toString();
  const [proposal] = await proposalsFor("ord_1033");
  await alice.approve(proposal as NonNullable<typeof proposal>);

  // Another process: new adapter, new agent, the same store and the saved string.
  const after = world("ord_1033", calls, true);
  const state = await RunState.fromString(after.agent, saved);
  assert.deepEqual(await after.approvals.release(state), []);
  const resumed = await run(after.agent, state);

  assert.equal(resumed.finalOutput, "done");
  after.model.assertComplete();
  assert.equal(after.model.calls.length, 1, "the model was asked once, after the tool ran");
  assert.equal(toolOutput(after.model)["kind"], "execution");
  assert.equal((await ledgerOf("ord_1033")).length, 1);
  assert.equal((await proposalsFor("ord_1033")).length, 1);
});

test("a declined proposal is rejected in the RunState, the model is told, and nothing is refunded", async () => {
  const { approvals, model, agent } = world("ord_1034");
  const first = await run(agent, "Refund ord_1034");
  const [pending] = await approvals.pending(first.state);
  await alice.reject(pending?.proposal as NonNullable<typeof pending>["proposal"], "wrong_amount");

  assert.deepEqual(await approvals.release(first.state), []);
  await run(agent, first.state);

  const input = JSON.stringify(model.lastCall?.request.input);
  assert.match(input, /was declined; nothing was done/);
  assert.equal((await ledgerOf("ord_1034")).length, 0);
});

test("an ambiguous amount is answered as a question without an interruption or a proposal", async () => {
  const approvals = new SignoffApprovals({ client: client("AGENT"), definitions: definitions() });
  const model = new ScriptedModel([
    [functionCall("refund_order", { order_id: "ord_1035", amount_minor: 199, currency: null, reason: null }, { callId: "call_q" })],
    [assistantMessage("Which currency?")],
  ]);
  const agent = new Agent({ name: "support", model, tools: approvals.tools() });
  const result = await run(agent, "Refund 199 on ord_1035");
  assert.equal(result.interruptions.length, 0);
  const answer = toolOutput(model);
  assert.equal(answer["kind"], "clarification");
  assert.equal(answer["field"], "currency");
  assert.equal((await proposalsFor("ord_1035")).length, 0);
});
