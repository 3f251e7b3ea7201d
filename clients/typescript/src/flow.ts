/**
 * What both framework adapters do with one write-tool call, on the {@link SignoffClient}:
 * propose it, wait for a person's decision in signoff, and only once signoff holds a
 * confirmation for that exact proposal pick up the one-time token and execute it — at most
 * once. The model gets a JSON answer with a `kind` and a `next_step`, the same shapes as
 * signoff's own agent tools (docs/AGENTS.md): `execution` (with the receipt), `proposal`
 * (still waiting), `clarification`, `refusal`. A framework's own approval is never consent:
 * nothing here executes unless signoff itself answers `confirmed`.
 */
import type { SignoffClient, WaitOptions } from "./client.js";
import { ClarificationNeeded, Conflict, OutcomeUnknown, SignoffError } from "./errors.js";
import { randomIdempotencyKey } from "./keys.js";
import type { ExecutionStatusView, ProposalView, ReceiptView } from "./types.js";

/** The tool a model calls to come back to a proposal that was still waiting. */
export const AWAIT_TOOL = "await_confirmation";

export type Action = "fix_arguments" | "ask_user" | "new_proposal" | "check_status" | "stop";

export interface ExecutionAnswer {
  kind: "execution";
  proposal_id: string;
  execution_id: string;
  status: string;
  receipt: ReceiptView | null;
  signed_receipt: string | null;
  duplicate: boolean;
  next_step: string;
}

export interface ProposalAnswer {
  kind: "proposal";
  proposal_id: string;
  status: string;
  title: string;
  expires_at: string;
  confirm_url: string;
  next_step: string;
}

export interface ClarificationAnswer {
  kind: "clarification";
  code: "clarification_needed";
  question: string;
  field: string | null;
  tool: string;
  next_step: string;
}

export interface RefusalAnswer {
  kind: "refusal";
  code: string;
  message: string;
  action: Action;
  next_step: string;
  details: Record<string, unknown>;
}

export type ToolAnswer = ExecutionAnswer | ProposalAnswer | ClarificationAnswer | RefusalAnswer;

export interface FlowOptions {
  /**
   * Where a person confirms: `{publicUrl}/ui/proposals/{id}` (the `--public-url` of
   * `signoff serve`). Default: the client's base URL.
   */
  publicUrl?: string;
  /** How long a call waits for the person's decision before answering "still waiting" (default 60 s). */
  wait?: Omit<WaitOptions, "signal">;
  /** Called once a proposal exists, e.g. to show its page URL or notify approvers. */
  onProposal?: (proposal: ProposalView, confirmUrl: string) => void | Promise<void>;
  /** The untrusted rationale recorded with each proposal (shown to the person as untrusted). */
  rationale?: string;
}

const REFUSED: Readonly<Record<string, { action: Action; next_step: string }>> = {
  declined: { action: "stop", next_step: "A person declined this proposal; nothing was done. Tell the user; do not retry or propose it again." },
  cancelled: { action: "stop", next_step: "The proposal was cancelled; nothing will run." },
  expired: {
    action: "new_proposal",
    next_step: "Nobody confirmed before the deadline, so nothing was done. If the user still wants it, call {request} again, which needs a new confirmation.",
  },
  revoked: { action: "stop", next_step: "The confirmation was revoked; nothing will run. Tell the user." },
};

const BY_CODE: Readonly<Record<string, { action: Action; next_step: string }>> = {
  invalid_arguments: {
    action: "fix_arguments",
    next_step: "Correct the arguments named in details.errors and call {request} again. Ask the user for any value you do not know; never guess one.",
  },
  invalid_request: { action: "fix_arguments", next_step: "The request was malformed; correct it before calling {request} again." },
  unknown_tool: { action: "stop", next_step: "Use only the tools you were given." },
  not_authenticated: { action: "stop", next_step: "Your credentials are missing or expired. Stop and tell the user." },
  not_found: { action: "ask_user", next_step: "Nothing with that id exists for you. Check the id (never guess ids) or ask the user." },
  forbidden: { action: "stop", next_step: "You may not do this. Tell the user; do not retry or look for another way." },
  separation_of_duties: { action: "stop", next_step: "A different person must confirm this; an agent never can. Do not retry." },
  subject_mismatch: { action: "stop", next_step: "Only the agent that requested this proposal may use its confirmation. Do not retry." },
  expired: {
    action: "new_proposal",
    next_step: "The confirmation window closed and nothing was done. If the user still wants this, call {request} again, which needs a new confirmation.",
  },
  token_expired: {
    action: "new_proposal",
    next_step: "The confirmation expired before the action ran, so nothing was done. If the user still wants this, call {request} again.",
  },
  state_changed: {
    action: "new_proposal",
    next_step: "The target changed after the person saw the preview, so nothing was done. Call {request} again so a person can confirm the current state.",
  },
  approver_revoked: {
    action: "new_proposal",
    next_step: "An approver lost the right to approve, so nothing was done. Tell the user; a new proposal ({request}) needs a new confirmation.",
  },
  already_consumed: {
    action: "check_status",
    next_step: "This confirmation was already used; the action will not run again. Call {await} with the proposal_id to read the outcome and receipt.",
  },
  execution_in_progress: { action: "check_status", next_step: "The action is running now. Call {await} with the proposal_id later." },
  attempts_exhausted: { action: "stop", next_step: "Every allowed attempt failed; nothing more will be tried. Tell the user what happened." },
  unknown: {
    action: "check_status",
    next_step: "The outcome is unknown: the action may or may not have happened. Never retry blindly and never make a new proposal for it. Call {await} with the proposal_id later.",
  },
  no_answer: {
    action: "check_status",
    next_step: "signoff did not answer, so the outcome is unknown. Never make a new proposal for it; call {await} with the proposal_id later.",
  },
  store_unavailable: { action: "check_status", next_step: "signoff cannot reach its store and knows no outcome. Do not make a new proposal; call {await} later." },
  unavailable: { action: "check_status", next_step: "signoff is unavailable and the outcome is unknown. Do not make a new proposal; call {await} later." },
  not_confirmed: {
    action: "check_status",
    next_step: "No person has confirmed this in signoff, so nothing was done. Tell the user where to confirm (confirm_url) and call {await} later.",
  },
};

const BY_STATUS: Readonly<Record<number, { action: Action; next_step: string }>> = {
  400: { action: "fix_arguments", next_step: "The request was malformed; correct it before calling {request} again." },
  401: BY_CODE["not_authenticated"] as { action: Action; next_step: string },
  403: BY_CODE["forbidden"] as { action: Action; next_step: string },
  404: BY_CODE["not_found"] as { action: Action; next_step: string },
  409: { action: "check_status", next_step: "It conflicts with the proposal's current state. Call {await} with the proposal_id." },
  422: { action: "stop", next_step: "signoff refused this. Tell the user; do not retry." },
};

const EXECUTED_NEXT: Readonly<Record<string, string>> = {
  succeeded: "Done, exactly once; the receipt is the proof. Tell the user. Never call {request} again for the same request.",
  failed_terminal: "It failed for good and will not be tried again. Tell the user what happened.",
  failed_retryable: "It failed but may be retried with the same request key: call {await} with the proposal_id later; never make a new proposal.",
  unknown: "The outcome is unknown: the action may or may not have happened. signoff looks it up; call {await} with the proposal_id later. Never make a new proposal.",
  needs_attention: "A person must resolve this execution in signoff. Tell the user; never make a new proposal.",
  prepared: "The action is starting. Call {await} with the proposal_id later.",
  running: "The action is running. Call {await} with the proposal_id later.",
};

const RETRIED = new Set(["failed_retryable", "unknown"]);
const EXECUTED = new Set(["executing", "succeeded", "failed_retryable", "failed_terminal", "unknown", "needs_attention"]);

/** One adapter's calls through one client: the proposals it made and the executions it ran. */
export class SignoffFlow {
  readonly #client: SignoffClient;
  readonly #publicUrl: string;
  readonly #options: FlowOptions;
  /** proposal id → the token picked up and the execution key, so a repeat never runs twice. */
  readonly #executions = new Map<string, { token?: string; key: string; executionId?: string }>();

  constructor(client: SignoffClient, options: FlowOptions = {}) {
    this.#client = client;
    this.#publicUrl = (options.publicUrl ?? client.baseUrl).replace(/\/+$/, "");
    this.#options = options;
  }

  get client(): SignoffClient {
    return this.#client;
  }

  confirmUrl(proposalId: string): string {
    return `${this.#publicUrl}/ui/proposals/${encodeURIComponent(proposalId)}`;
  }

  /** Freeze the call into a proposal; a refusal or a question comes back as an answer. */
  async propose(tool: string, input: unknown, signal?: AbortSignal): Promise<ProposalView | ClarificationAnswer | RefusalAnswer> {
    const args = input !== null && typeof input === "object" && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
    try {
      const proposal = await this.#client.propose(tool, args, {
        ...(this.#options.rationale === undefined ? {} : { rationale: this.#options.rationale }),
        ...(signal === undefined ? {} : { signal }),
      });
      await this.#options.onProposal?.(proposal, this.confirmUrl(proposal.proposal_id));
      return proposal;
    } catch (error) {
      if (error instanceof OutcomeUnknown) {
        // The proposal may exist: never propose again on its own.
        return refusal(error, tool, "Never call {request} again for this: signoff did not answer, so a proposal may exist. Tell the user to check signoff's inbox.");
      }
      return answerOf(error, tool);
    }
  }

  /**
   * Where the proposal stands, and its execution once a person confirmed it: waits up to
   * `waitMs` (default: the flow's `wait`) for the decision, then picks up the token and
   * executes exactly once. Answers what the model should know next.
   */
  async settle(tool: string, proposalId: string, options: { waitMs?: number; signal?: AbortSignal } = {}): Promise<ToolAnswer> {
    try {
      const wait = { ...this.#options.wait, ...(options.waitMs === undefined ? {} : { timeoutMs: options.waitMs }) };
      const proposal = await this.#client.waitForDecision(proposalId, { ...wait, ...(options.signal ? { signal: options.signal } : {}) });
      if (proposal.status === "confirmed") return await this.#execute(tool, proposal, options.signal);
      if (EXECUTED.has(proposal.status)) {
        const memo = this.#executions.get(proposalId);
        const call = options.signal === undefined ? {} : { signal: options.signal };
        if (memo?.executionId !== undefined && RETRIED.has(proposal.status)) {
          // A retryable failure runs again, an unknown outcome is looked up: the provider sees
          // the same request key, so this never writes twice.
          const retried = await this.#client.retryExecution(memo.executionId, call);
          const view = retried.accepted ? await this.#client.waitForExecution(memo.executionId, { ...this.#options.wait, ...call }) : retried;
          return executionAnswer(tool, view, false);
        }
        // This flow ran it: the same token and key answer the first outcome again.
        if (memo?.token !== undefined) return await this.#execute(tool, proposal, options.signal);
        return this.#pending(proposal, fill(EXECUTED_NEXT[proposal.status] ?? EXECUTED_NEXT["running"] ?? "", tool));
      }
      const refused = REFUSED[proposal.status];
      if (refused !== undefined) {
        return {
          kind: "refusal",
          code: proposal.status,
          message: `the proposal ${proposal.proposal_id} was ${proposal.status}; nothing was done`,
          action: refused.action,
          next_step: fill(refused.next_step, tool),
          details: { proposal_id: proposal.proposal_id, status: proposal.status },
        };
      }
      return this.#pending(
        proposal,
        fill(
          "A person has not confirmed yet; nothing was done. Tell the user to confirm at confirm_url, then call {await} with this proposal_id. Do not call {request} again for the same request: that would make a second proposal.",
          tool,
        ),
      );
    } catch (error) {
      return answerOf(error, tool);
    }
  }

  /** The proposal's answer without waiting or executing (for a proposal not yet confirmed). */
  pendingAnswer(tool: string, proposal: ProposalView, nextStep: string): ProposalAnswer {
    return this.#pending(proposal, fill(nextStep, tool));
  }

  async #execute(tool: string, proposal: ProposalView, signal?: AbortSignal): Promise<ToolAnswer> {
    const id = proposal.proposal_id;
    const memo = this.#executions.get(id) ?? { key: randomIdempotencyKey("exec") };
    this.#executions.set(id, memo);
    const call = signal === undefined ? {} : { signal };
    // Only the requesting principal gets the token, only while the proposal is confirmed.
    memo.token ??= (await this.#client.confirmationToken(id, call)).confirmation_token;
    let outcome: ExecutionStatusView & { duplicate?: boolean; accepted?: boolean };
    try {
      // The same key on every repeat: a lost answer is answered again, never run twice.
      outcome = await this.#client.execute(id, memo.token, { idempotencyKey: memo.key, ...call });
    } catch (error) {
      const executionId = error instanceof SignoffError ? error.member("execution_id") : undefined;
      if (error instanceof Conflict && typeof executionId === "string") {
        memo.executionId = executionId;
        outcome = await this.#client.execution(executionId, call);
      } else {
        throw error;
      }
    }
    memo.executionId = outcome.execution.execution_id;
    if (outcome.accepted === true) {
      outcome = { ...(await this.#client.waitForExecution(memo.executionId, { ...this.#options.wait, ...call })), duplicate: outcome.duplicate ?? false };
    }
    return executionAnswer(tool, outcome, outcome.duplicate ?? false);
  }

  #pending(proposal: ProposalView, nextStep: string): ProposalAnswer {
    return {
      kind: "proposal",
      proposal_id: proposal.proposal_id,
      status: proposal.status,
      title: proposal.preview.title,
      expires_at: proposal.expires_at,
      confirm_url: this.confirmUrl(proposal.proposal_id),
      next_step: nextStep,
    };
  }
}

function executionAnswer(tool: string, view: ExecutionStatusView, duplicate: boolean): ExecutionAnswer {
  const status = view.execution.status;
  return {
    kind: "execution",
    proposal_id: view.execution.proposal_id,
    execution_id: view.execution.execution_id,
    status,
    receipt: view.receipt ?? null,
    signed_receipt: view.signed_receipt ?? null,
    duplicate,
    next_step: fill(EXECUTED_NEXT[status] ?? "Tell the user the status.", tool),
  };
}

/** The answer for an error: a clarification, a refusal, or (not signoff's) thrown again. */
export function answerOf(error: unknown, tool: string): ClarificationAnswer | RefusalAnswer {
  if (error instanceof ClarificationNeeded) {
    return {
      kind: "clarification",
      code: "clarification_needed",
      question: error.message,
      field: error.field ?? null,
      tool,
      next_step: fill(
        "Nothing was created. Ask the user exactly this question, then call {request} again with their answer. Do not fill the value in yourself.",
        tool,
      ),
    };
  }
  if (error instanceof SignoffError) return refusal(error, tool);
  throw error;
}

export function refusal(error: SignoffError, tool: string, nextStep?: string): RefusalAnswer {
  const advice = BY_CODE[error.code] ?? BY_STATUS[error.status] ?? { action: "check_status" as const, next_step: "signoff could not do this now. Call {await} later; never make a new proposal." };
  const details: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(error.problem)) {
    if (!["type", "title", "status", "detail", "code", "instance"].includes(name)) details[name] = value;
  }
  return {
    kind: "refusal",
    code: error.code,
    message: error.message,
    action: advice.action,
    next_step: fill(nextStep ?? advice.next_step, tool),
    details,
  };
}

export function fill(template: string, tool: string): string {
  return template.replaceAll("{request}", tool).replaceAll("{await}", AWAIT_TOOL);
}
