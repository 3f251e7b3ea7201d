// The Vercel AI SDK adapter driven by the SDK's own mock model (`ai/test`), against the live
// server: the tool result is the receipt or the refusal's next_step, and the SDK's own approval
// never performs a write — the refund provider's ledger says so.
import assert from "node:assert/strict";
import { test } from "node:test";

import { generateText, stepCountIs, type ModelMessage, type ToolApprovalResponse } from "ai";
import { MockLanguageModelV4 } from "ai/test";

import { signoffTools, type ToolAnswer } from "@signoff/client/ai-sdk";

import { approveWhenItArrives, client, definitions, failNextRefund, ledgerOf, proposalsFor, refund } from "./live.js";

type Call = { toolName: string; input: Record<string, unknown> } | { text: string };
/** A step may read the tool results the model was shown so far (a proposal_id, say). */
type Step = Call | ((shown: ToolAnswer[]) => Call);

const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };

/** The SDK's mock model playing a script: one tool call or text per model call. */
function scripted(...script: Step[]) {
  let n = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const next = script[n] ?? { text: "done" };
      const step = typeof next === "function" ? next(resultsIn(prompt)) : next;
      n += 1;
      if ("text" in step) {
        return { content: [{ type: "text", text: step.text }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] };
      }
      return {
        content: [{ type: "tool-call", toolCallId: `call_${n}`, toolName: step.toolName, input: JSON.stringify(step.input) }],
        finishReason: { unified: "tool-calls", raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  return model;
}

/** The tool results the model was shown in its last call, in order. */
function toolResults(model: MockLanguageModelV4): ToolAnswer[] {
  return resultsIn(model.doGenerateCalls.at(-1)?.prompt ?? []);
}

function resultsIn(prompt: MockLanguageModelV4["doGenerateCalls"][number]["prompt"]): ToolAnswer[] {
  const results: ToolAnswer[] = [];
  for (const message of prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type === "tool-result" && part.output.type === "json") results.push(part.output.value as unknown as ToolAnswer);
    }
  }
  return results;
}

const agent = () => client("AGENT");
const idOf = (shown: ToolAnswer[]): string => {
  const found = shown.find((answer) => "proposal_id" in answer);
  return found !== undefined && "proposal_id" in found ? found.proposal_id : "none";
};
const fast = { timeoutMs: 20_000, intervalMs: 50, maxIntervalMs: 200 };

test("the model's refund is proposed, waits for the person, runs once, and the model gets the receipt", async () => {
  const tools = signoffTools({ client: agent(), definitions: definitions(), wait: fast });
  assert.deepEqual(Object.keys(tools), ["refund_order", "add_order_note", "suspend_account", "await_confirmation"]);
  const model = scripted({ toolName: "refund_order", input: refund("ord_1021") }, { text: "refunded" });

  const [result] = await Promise.all([
    generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "Refund order ord_1021, ¥199.00" }),
    approveWhenItArrives("ord_1021"),
  ]);

  assert.equal(result.text, "refunded");
  const [answer] = toolResults(model);
  assert.equal(answer?.kind, "execution");
  if (answer?.kind !== "execution") return;
  assert.equal(answer.status, "succeeded");
  assert.deepEqual(answer.receipt?.approvers, ["alice"]);
  assert.match(answer.next_step, /exactly once/);
  const ledger = await ledgerOf("ord_1021");
  assert.equal(ledger.length, 1);
  assert.equal(ledger[0]?.request_key, answer.receipt?.request_key);
});

test("a declined refund answers the refusal's next_step, and nothing is refunded", async () => {
  const tools = signoffTools({ client: agent(), definitions: definitions(), wait: fast });
  const model = scripted({ toolName: "refund_order", input: refund("ord_1022") });
  const alice = client("ALICE");
  const decline = (async () => {
    for (;;) {
      const shown = (await alice.awaitingConfirmation()).find((p) => p.arguments["order_id"] === "ord_1022");
      if (shown !== undefined) return alice.reject(shown, "suspicious");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  await Promise.all([generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "Refund ord_1022" }), decline]);

  const [answer] = toolResults(model);
  assert.equal(answer?.kind, "refusal");
  if (answer?.kind !== "refusal") return;
  assert.equal(answer.code, "declined");
  assert.equal(answer.action, "stop");
  assert.match(answer.next_step, /declined/);
  assert.equal((await ledgerOf("ord_1022")).length, 0);
});

test("the SDK's own approval (toolApproval) lets execute start, but only signoff's confirmation refunds", async () => {
  const tools = signoffTools({ client: agent(), definitions: definitions(), wait: { ...fast, timeoutMs: 300 } });
  const model = scripted(
    { toolName: "refund_order", input: refund("ord_1023") },
    { text: "it awaits confirmation" },
    (shown) => ({ toolName: "await_confirmation", input: { proposal_id: idOf(shown) } }),
    (shown) => ({ toolName: "await_confirmation", input: { proposal_id: idOf(shown) } }),
    { text: "refunded" },
  );
  const toolApproval = { refund_order: "user-approval" } as const;
  const messages: ModelMessage[] = [{ role: "user", content: "Refund ord_1023" }];

  const first = await generateText({ model, tools, toolApproval, stopWhen: stepCountIs(3), messages });
  const requests = first.content.filter((part) => part.type === "tool-approval-request");
  assert.equal(requests.length, 1, "the SDK asks for its approval");
  assert.equal((await proposalsFor("ord_1023")).length, 0, "nothing proposed before the SDK's approval");
  messages.push(...first.responseMessages);
  const approved: ToolApprovalResponse[] = requests.map((part) => ({ type: "tool-approval-response", approvalId: part.approvalId, approved: true }));
  messages.push({ role: "tool", content: approved });

  // Approved in the SDK: execute runs, asks signoff, and nobody has confirmed there.
  const second = await generateText({ model, tools, toolApproval, stopWhen: stepCountIs(3), messages });
  messages.push(...second.responseMessages);
  const [waiting] = toolResults(model);
  assert.equal(waiting?.kind, "proposal");
  if (waiting?.kind !== "proposal") return;
  assert.equal(waiting.status, "awaiting_confirmation");
  assert.match(waiting.next_step, /await_confirmation/);
  assert.equal((await ledgerOf("ord_1023")).length, 0, "the SDK's approval alone refunded nothing");
  const [proposal] = await proposalsFor("ord_1023");
  assert.equal(proposal?.status, "awaiting_confirmation");
  assert.equal(waiting.confirm_url.endsWith(`/ui/proposals/${waiting.proposal_id}`), true);

  // A person confirms in signoff; the model comes back with await_confirmation, twice.
  await client("ALICE").approve(proposal as NonNullable<typeof proposal>);
  messages.push({ role: "user", content: "The manager approved it, go on." });
  await generateText({ model, tools, stopWhen: stepCountIs(4), messages });
  const [done, repeated] = toolResults(model).slice(-2);
  assert.equal(done?.kind, "execution");
  assert.equal(done?.kind === "execution" && done.status, "succeeded");
  assert.equal(repeated?.kind, "execution");
  assert.equal(repeated?.kind === "execution" && repeated.duplicate, true, "asked again: the first outcome");
  assert.equal((await ledgerOf("ord_1023")).length, 1, "one refund, however often it is asked");
});

test("the deprecated needsApproval, approved in the SDK, refunds nothing either", async () => {
  const base = signoffTools({ client: agent(), definitions: definitions(), wait: { ...fast, timeoutMs: 200 } });
  const tools = { ...base, refund_order: { ...base["refund_order"], needsApproval: true } } as typeof base;
  const model = scripted({ toolName: "refund_order", input: refund("ord_1024") });
  const messages: ModelMessage[] = [{ role: "user", content: "Refund ord_1024" }];
  const first = await generateText({ model, tools, stopWhen: stepCountIs(3), messages });
  const requests = first.content.filter((part) => part.type === "tool-approval-request");
  assert.equal(requests.length, 1);
  messages.push(...first.responseMessages, {
    role: "tool",
    content: requests.map((part) => ({ type: "tool-approval-response", approvalId: part.approvalId, approved: true })),
  });
  await generateText({ model, tools, stopWhen: stepCountIs(3), messages });
  assert.equal(toolResults(model)[0]?.kind, "proposal");
  assert.equal((await ledgerOf("ord_1024")).length, 0);
});

test("an ambiguous amount is a question for the user, and nothing is proposed", async () => {
  const tools = signoffTools({ client: agent(), definitions: definitions(), wait: fast });
  const model = scripted({ toolName: "refund_order", input: { order_id: "ord_1025", amount_minor: 199, currency: null, reason: null } });
  await generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "Refund 199 on ord_1025" });
  const [answer] = toolResults(model);
  assert.equal(answer?.kind, "clarification");
  if (answer?.kind !== "clarification") return;
  assert.equal(answer.field, "currency");
  assert.match(answer.next_step, /Ask the user/);
  assert.equal((await proposalsFor("ord_1025")).length, 0);
});

for (const [mode, first, orderId] of [
  ["retryable", "failed_retryable", "ord_1026"],
  ["timeout_after_success", "unknown", "ord_1027"],
] as const) {
  test(`a ${mode} provider call answers ${first}; await_confirmation settles it under the same request key, one refund`, async () => {
    const tools = signoffTools({ client: agent(), definitions: definitions(), wait: fast });
    const model = scripted(
      { toolName: "refund_order", input: refund(orderId) },
      (shown) => ({ toolName: "await_confirmation", input: { proposal_id: idOf(shown) } }),
      { text: "done" },
    );
    failNextRefund(mode);

    await Promise.all([generateText({ model, tools, stopWhen: stepCountIs(4), prompt: `Refund ${orderId}` }), approveWhenItArrives(orderId)]);

    const [failed, settled] = toolResults(model);
    assert.equal(failed?.kind, "execution");
    assert.equal(failed?.kind === "execution" && failed.status, first);
    assert.match(failed?.next_step ?? "", /await_confirmation/);
    assert.equal(settled?.kind, "execution");
    if (settled?.kind !== "execution" || failed?.kind !== "execution") return;
    assert.equal(settled.status, "succeeded");
    assert.equal(settled.execution_id, failed.execution_id, "the same execution, not a second one");
    const ledger = await ledgerOf(orderId);
    assert.equal(ledger.length, 1, "one refund at the provider");
    assert.equal(ledger[0]?.request_key, settled.receipt?.request_key);
  });
}
