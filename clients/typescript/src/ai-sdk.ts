/**
 * signoff for the Vercel AI SDK (`ai` 7): a catalog's write tools as AI SDK tools.
 *
 *     import { generateText, stepCountIs } from "ai";
 *     import { signoffTools } from "@signoff/client/ai-sdk";
 *
 *     const tools = signoffTools({ client: agent, definitions, wait: { timeoutMs: 120_000 } });
 *     await generateText({ model, tools, stopWhen: stepCountIs(5), prompt });
 *
 * The model calls the write tool itself (`refund_order`, with the catalog's strict schema).
 * Its `execute` freezes the call into a signoff proposal, waits for a person's decision in
 * signoff (the page, the Java CRM, any approval surface), and only when signoff answers
 * `confirmed` picks up the one-time token and executes — exactly once. The tool result is the
 * execution with its receipt, or a refusal / clarification / "still waiting" answer with its
 * `next_step`. A call still waiting when `wait.timeoutMs` runs out answers `kind: "proposal"`;
 * the model comes back with `await_confirmation` (proposal_id), which never proposes again.
 *
 * The SDK's own approval (`toolApproval` / the deprecated `needsApproval`) may sit in front as
 * a UI step, but it is never consent: approving there only lets `execute` start, and `execute`
 * still needs signoff's confirmation of exactly these arguments — the SDK's approval is not
 * bound to the arguments unless `experimental_toolApprovalSecret` is set, and a client-side
 * history can forge it.
 */
import { jsonSchema, tool, type Tool, type ToolSet } from "ai";

import type { SignoffClient } from "./client.js";
import { writeTools } from "./catalog.js";
import { answerOf, AWAIT_TOOL, SignoffFlow, type FlowOptions, type ToolAnswer } from "./flow.js";

export interface SignoffToolsOptions extends FlowOptions {
  /** The agent's client: its bearer token names the person and the agent acting for them. */
  client: SignoffClient;
  /** `signoff tools --format openai` (or `openai-responses`, `mcp`) JSON, parsed. */
  definitions: unknown;
  /** Only these write tools (default: every write tool of the catalog). */
  only?: readonly string[];
}

const AWAIT_SCHEMA = {
  type: "object",
  properties: {
    proposal_id: { type: "string", maxLength: 128, description: "The proposal_id a write tool answered" },
  },
  required: ["proposal_id"],
  additionalProperties: false,
} as const;

/** One AI SDK tool per write tool, plus `await_confirmation`; see the module comment. */
export function signoffTools(options: SignoffToolsOptions): ToolSet {
  const flow = new SignoffFlow(options.client, options);
  const specs = writeTools(options.definitions).filter((spec) => options.only === undefined || options.only.includes(spec.name));
  const tools: Record<string, Tool> = {};
  const names = new Map<string, string>();
  for (const spec of specs) {
    tools[spec.name] = tool({
      description: `${spec.description.replace(/\.$/, "")}. A person must confirm exactly this call in signoff before it runs; this tool waits for that decision and then performs it once, answering its receipt.`,
      inputSchema: jsonSchema<Record<string, unknown>>(spec.parameters),
      strict: true,
      execute: async (input, { abortSignal }): Promise<ToolAnswer> => {
        const proposed = await flow.propose(spec.name, input, abortSignal);
        if ("kind" in proposed) return proposed;
        names.set(proposed.proposal_id, spec.name);
        return flow.settle(spec.name, proposed.proposal_id, abortSignal === undefined ? {} : { signal: abortSignal });
      },
    });
  }
  tools[AWAIT_TOOL] = tool({
    description:
      "Comes back to a request that was still waiting for a person: waits for the decision on the proposal again and, once a person confirmed it in signoff, performs exactly the confirmed operation, at most once, answering its receipt. Never creates a new request.",
    inputSchema: jsonSchema<{ proposal_id: string }>(AWAIT_SCHEMA),
    strict: true,
    execute: async ({ proposal_id }, { abortSignal }): Promise<ToolAnswer> => {
      let name = names.get(proposal_id);
      if (name === undefined) {
        try {
          name = (await options.client.proposal(proposal_id)).tool;
        } catch (error) {
          return answerOf(error, "the write tool");
        }
      }
      return flow.settle(name, proposal_id, abortSignal === undefined ? {} : { signal: abortSignal });
    },
  });
  return tools;
}

export { AWAIT_TOOL, SignoffFlow, writeTools };
export type { ToolAnswer };
export type * from "./flow.js";
export type { WriteToolSpec, JsonSchemaObject } from "./catalog.js";
