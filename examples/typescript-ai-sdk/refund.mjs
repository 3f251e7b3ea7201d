// A Vercel AI SDK agent whose refund a person confirms in signoff, end to end and offline:
//
//   npm --prefix clients/typescript ci && npm --prefix clients/typescript run build
//   npm --prefix examples/typescript-ai-sdk ci && npm --prefix examples/typescript-ai-sdk start
//
// It starts `signoff serve --demo` (SIGNOFF_BIN, else the repository's .venv/bin/signoff) on a
// free loopback port, gives the model the demo catalog's write tools through `signoffTools`,
// and lets the SDK's own mock model (`ai/test`) ask for a refund. The tool call becomes a
// signoff proposal; alice, an entitled approver, approves it from her inbox (what the
// confirmation page or the Java CRM does); only then is it executed, once, and the model gets
// the receipt. To use a real model, replace `model` with e.g. `openai("gpt-5")` from
// `@ai-sdk/openai` and drop the scripted steps.
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV4 } from "ai/test";

import { SignoffClient } from "@signoff/client";
import { signoffTools } from "@signoff/client/ai-sdk";
import { startDemoServer } from "@signoff/client/testing";

const usage = { inputTokens: { total: 1 }, outputTokens: { total: 1 } };
const finish = (unified) => ({ unified, raw: undefined });

const demo = await startDemoServer();
try {
  // Identity comes from your session, never from the model: u_42, through agent:support-bot.
  const agent = new SignoffClient({ baseUrl: demo.url, token: demo.token("--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot") });
  const alice = agent.withToken(demo.token("--sub", "alice", "--tenant", "acme", "--role", "refund_approver"));

  const tools = signoffTools({
    client: agent,
    definitions: demo.tools("openai"), // `signoff tools --demo --format openai`
    onProposal: (proposal, confirmUrl) => console.log(`proposal ${proposal.proposal_id}: "${proposal.preview.title}" — a person confirms at ${confirmUrl}`),
    wait: { timeoutMs: 60_000 },
  });

  let step = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async () => {
      step += 1;
      if (step === 1) {
        const input = { order_id: "ord_1001", amount_minor: 19900, currency: "CNY", reason: "parcel never arrived" };
        return { content: [{ type: "tool-call", toolCallId: "call_1", toolName: "refund_order", input: JSON.stringify(input) }], finishReason: finish("tool-calls"), usage, warnings: [] };
      }
      return { content: [{ type: "text", text: "The refund of ¥199.00 is done." }], finishReason: finish("stop"), usage, warnings: [] };
    },
  });

  // The person: alice approves exactly the version she was shown.
  const person = (async () => {
    for (;;) {
      const [shown] = await alice.awaitingConfirmation();
      if (shown !== undefined) return alice.approve(shown);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();

  const [result] = await Promise.all([
    generateText({ model, tools, stopWhen: stepCountIs(3), prompt: "Refund order ord_1001 (¥199.00), the parcel never arrived." }),
    person,
  ]);
  const answer = result.steps[0]?.toolResults[0]?.output;
  console.log(`tool result: ${answer.kind} ${answer.status}, receipt approvers ${JSON.stringify(answer.receipt.approvers)}`);
  console.log(`model: ${result.text}`);
  const ledger = await agent.demoLedger();
  console.log(`provider ledger: ${JSON.stringify(ledger.map((entry) => [entry.order_id, entry.amount_minor, entry.currency]))}`);
} finally {
  await demo.stop();
}
