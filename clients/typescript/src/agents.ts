/**
 * signoff for OpenAI Agents JS (`@openai/agents`): the SDK's tool approvals mapped onto signoff,
 * so that only a signoff decision releases a write.
 *
 *     const approvals = new SignoffApprovals({ client: agentClient, definitions });
 *     const agent = new Agent({ name: "support", model, tools: approvals.tools() });
 *     let result = await run(agent, "Refund order ord_1001");
 *     // result.interruptions: each is a signoff proposal; show approvals.pending(result.state)
 *     // ... a person decides in signoff (the page, the Java CRM, any approval surface) ...
 *     const waiting = await approvals.release(result.state);   // approve / reject from signoff
 *     if (waiting.length === 0) result = await run(agent, result.state);
 *
 * The model calls the write tool itself (`refund_order`). Its `needsApproval` freezes the call
 * into a signoff proposal and interrupts the run. {@link SignoffApprovals.release} approves in
 * the `RunState` the calls signoff confirmed and rejects the ones it declined, cancelled,
 * expired or revoked. Approving in the SDK alone executes nothing: the tool body writes only
 * when signoff holds a confirmation for that exact proposal, and otherwise answers where the
 * proposal stands. A serialized `RunState`'s approvals are not authenticated (anyone holding the
 * string can edit them), so they are never taken as consent.
 *
 * Which proposal belongs to which call is kept in a {@link CallStore} (in memory by default);
 * resuming a saved `RunState` in another process needs a shared one (a table, Redis), because
 * signoff's API has no lookup by tool call.
 */
import { tool, type FunctionTool, type RunContext, type RunState, type RunToolApprovalItem } from "@openai/agents";

import { writeTools, type WriteToolSpec } from "./catalog.js";
import type { SignoffClient } from "./client.js";
import { answerOf, SignoffFlow, type FlowOptions, type ToolAnswer } from "./flow.js";
import type { ProposalView } from "./types.js";

/** Where the proposal id of each interrupted tool call is kept. */
export interface CallStore {
  get(key: string): string | undefined | Promise<string | undefined>;
  set(key: string, proposalId: string): unknown;
}

export interface SignoffApprovalsOptions extends FlowOptions {
  /**
   * The agent's client (its token names the person and the agent acting for them), or a function
   * of the run's context object returning it — identity comes from your session, never the model.
   */
  client: SignoffClient | ((context: unknown) => SignoffClient);
  /** `signoff tools --format openai` (or `openai-responses`, `mcp`) JSON, parsed. */
  definitions: unknown;
  only?: readonly string[];
  calls?: CallStore;
}

export interface Pending {
  item: RunToolApprovalItem;
  proposal: ProposalView;
  confirmUrl: string;
}

const REFUSED = new Set(["declined", "cancelled", "expired", "revoked"]);
const RELEASED = new Set(["confirmed", "executing", "succeeded", "failed_retryable", "failed_terminal", "unknown", "needs_attention"]);

export class SignoffApprovals {
  readonly #options: SignoffApprovalsOptions;
  readonly #specs: WriteToolSpec[];
  readonly #calls: CallStore;
  readonly #flows = new WeakMap<SignoffClient, SignoffFlow>();
  /** Calls signoff refused at once (bad arguments, a question): answered without a proposal. */
  readonly #refusals = new Map<string, ToolAnswer>();

  constructor(options: SignoffApprovalsOptions) {
    this.#options = options;
    this.#specs = writeTools(options.definitions).filter((spec) => options.only === undefined || options.only.includes(spec.name));
    this.#calls = options.calls ?? new Map<string, string>();
  }

  /** One function tool per write tool, named after it, with the catalog's strict schema. */
  tools(): FunctionTool<unknown>[] {
    return this.#specs.map((spec) => this.#tool(spec));
  }

  /** The interrupted calls of `state` with their signoff proposals, for showing the person. */
  async pending<C>(state: RunState<C, any>, context?: C): Promise<Pending[]> {
    const found: Pending[] = [];
    for (const item of state.getInterruptions()) {
      const callId = callIdOf(item);
      if (callId === undefined || item.name === undefined) continue;
      const proposalId = await this.#calls.get(storeKey(item.name, callId));
      if (proposalId === undefined) continue;
      const flow = this.#flow(context ?? contextOf(state));
      found.push({ item, proposal: await flow.client.proposal(proposalId), confirmUrl: flow.confirmUrl(proposalId) });
    }
    return found;
  }

  /** Approve in `state` what signoff confirmed, reject what it refused; answer what still waits. */
  async release<C>(state: RunState<C, any>, context?: C): Promise<Pending[]> {
    const waiting: Pending[] = [];
    for (const pending of await this.pending(state, context)) {
      const { status, proposal_id } = pending.proposal;
      if (RELEASED.has(status)) {
        state.approve(pending.item);
      } else if (REFUSED.has(status)) {
        state.reject(pending.item, { message: `signoff: the proposal ${proposal_id} was ${status}; nothing was done` });
      } else {
        waiting.push(pending);
      }
    }
    return waiting;
  }

  #flow(context: unknown): SignoffFlow {
    const client = typeof this.#options.client === "function" ? this.#options.client(context) : this.#options.client;
    let flow = this.#flows.get(client);
    if (flow === undefined) {
      flow = new SignoffFlow(client, this.#options);
      this.#flows.set(client, flow);
    }
    return flow;
  }

  #tool(spec: WriteToolSpec): FunctionTool<unknown> {
    return tool({
      name: spec.name,
      description: `${spec.description.replace(/\.$/, "")}. A person must confirm exactly this call in signoff before it runs; until then it does nothing.`,
      parameters: spec.parameters as never,
      strict: true,
      needsApproval: async (runContext: RunContext<unknown>, input: unknown, callId?: string): Promise<boolean> => {
        if (callId === undefined) return true;
        const key = storeKey(spec.name, callId);
        // Called again when the run resumes: the call's proposal exists, never propose twice.
        if ((await this.#calls.get(key)) !== undefined) return true;
        const proposed = await this.#flow(runContext.context).propose(spec.name, input);
        if ("kind" in proposed) {
          // Nothing to approve: the call answers this refusal or question to the model.
          this.#refusals.set(key, proposed);
          return false;
        }
        await this.#calls.set(key, proposed.proposal_id);
        return true;
      },
      execute: async (_input: unknown, runContext?: RunContext<unknown>, details?: { toolCall?: { callId: string } }): Promise<string> => {
        const callId = details?.toolCall?.callId;
        const key = callId === undefined ? undefined : storeKey(spec.name, callId);
        const refused = key === undefined ? undefined : this.#refusals.get(key);
        if (refused !== undefined) return JSON.stringify(refused);
        const proposalId = key === undefined ? undefined : await this.#calls.get(key);
        const flow = this.#flow(runContext?.context);
        if (proposalId === undefined) {
          return JSON.stringify({
            kind: "refusal",
            code: "not_confirmed",
            message: "no signoff proposal belongs to this call; nothing was done",
            action: "stop",
            next_step: "Nothing was done. Call the tool again so that signoff can ask a person.",
            details: {},
          } satisfies ToolAnswer);
        }
        let proposal: ProposalView;
        try {
          proposal = await flow.client.proposal(proposalId);
        } catch (error) {
          return JSON.stringify(answerOf(error, spec.name));
        }
        if (!RELEASED.has(proposal.status) && !REFUSED.has(proposal.status)) {
          // Approved in the SDK alone: signoff holds no confirmation, so nothing is performed.
          return JSON.stringify(
            flow.pendingAnswer(
              spec.name,
              proposal,
              "No person has confirmed this in signoff, so nothing was done (an approval inside the agent framework is not a confirmation). Tell the user to confirm at confirm_url.",
            ),
          );
        }
        return JSON.stringify(await flow.settle(spec.name, proposalId, { waitMs: 0 }));
      },
    }) as FunctionTool<unknown>;
  }
}

function storeKey(tool: string, callId: string): string {
  return `${tool}\u0000${callId}`;
}

function callIdOf(item: RunToolApprovalItem): string | undefined {
  const raw = item.rawItem as { callId?: unknown };
  return typeof raw.callId === "string" ? raw.callId : undefined;
}

function contextOf<C>(state: RunState<C, any>): C {
  return state._context.context;
}
