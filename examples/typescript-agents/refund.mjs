// An OpenAI Agents JS run whose refund a person confirms in signoff, end to end and offline:
//
//   npm --prefix clients/typescript ci && npm --prefix clients/typescript run build
//   npm --prefix examples/typescript-agents ci && npm --prefix examples/typescript-agents start
//
// It starts `signoff serve --demo` (SIGNOFF_BIN, else the repository's .venv/bin/signoff) on a
// free loopback port. The SDK's own ScriptedModel (`@openai/agents/testing`) plays the model and
// calls `refund_order`; the tool's needsApproval turns the call into a signoff proposal and the
// run stops with an interruption. The run state is saved as a string, alice approves in signoff
// (what the confirmation page or the Java CRM does), and the run resumes from the saved string:
// `release` approves in the RunState only what signoff confirmed, and the tool executes once.
// Tracing is off, so nothing leaves the machine. To use a real model, drop `model` (the SDK's
// default OpenAI model, OPENAI_API_KEY) and the scripted steps.
import { Agent, RunState, run, setTracingDisabled } from "@openai/agents";
import { assistantMessage, functionCall, ScriptedModel } from "@openai/agents/testing";

import { SignoffClient } from "@signoff/client";
import { SignoffApprovals } from "@signoff/client/agents";
import { startDemoServer } from "@signoff/client/testing";

setTracingDisabled(true);

const demo = await startDemoServer();
try {
  // Identity comes from your session, never from the model: u_42, through agent:support-bot.
  const agentClient = new SignoffClient({ baseUrl: demo.url, token: demo.token("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot") });
  const alice = agentClient.withToken(demo.token("--sub", "alice", "--tenant", "acme", "--role", "refund_approver"));
  // Which proposal belongs to which tool call: in a real deployment a table or Redis, shared by
  // every process that may resume a run.
  const calls = new Map();
  const definitions = demo.tools("openai"); // `signoff tools --demo --format openai`

  const done = [assistantMessage("The refund of ¥199.00 is done.")];
  const build = (...script) => {
    const approvals = new SignoffApprovals({ client: agentClient, definitions, calls });
    const model = new ScriptedModel(script);
    const agent = new Agent({ name: "support", instructions: "Refund what the customer is owed.", model, tools: approvals.tools() });
    return { approvals, agent };
  };

  const refund = { order_id: "ord_1001", amount_minor: 19900, currency: "CNY", reason: "parcel never arrived" };
  const first = build([functionCall("refund_order", refund, { callId: "call_1" })], done);
  const stopped = await run(first.agent, "Refund order ord_1001 (¥199.00), the parcel never arrived.");
  for (const pending of await first.approvals.pending(stopped.state)) {
    console.log(`interrupted: ${pending.item.name} is proposal ${pending.proposal.proposal_id} (${pending.proposal.status}) — a person confirms at ${pending.confirmUrl}`);
  }
  const saved = stopped.state.toString();

  // The person decides in signoff, not in the run state.
  const [shown] = await alice.awaitingConfirmation();
  await alice.approve(shown);
  console.log(`alice approved ${shown.proposal_id}`);

  // Later, maybe in another process: the saved state, a fresh adapter, the shared call store.
  // The run continues after the tool call, so this model only gives the final answer.
  const later = build(done);
  const state = await RunState.fromString(later.agent, saved);
  const waiting = await later.approvals.release(state);
  console.log(`still waiting: ${waiting.length}`);
  const finished = await run(later.agent, state);
  console.log(`model: ${finished.finalOutput}`);
  const ledger = await agentClient.demoLedger();
  console.log(`provider ledger: ${JSON.stringify(ledger.map((entry) => [entry.order_id, entry.amount_minor, entry.currency]))}`);
} finally {
  await demo.stop();
}
