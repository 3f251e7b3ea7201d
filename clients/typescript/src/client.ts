/**
 * A client of the signoff HTTP API with the protocol's semantics, on the platform's `fetch`.
 *
 *     const agent = new SignoffClient({ baseUrl: "http://127.0.0.1:8000", token: agentJwt });
 *     const proposal = await agent.propose("refund_order", { order_id: "ord_1001", ... });
 *     // a person approves (the page, the Java CRM, or `approver.approve(shown)` below)
 *     const { confirmation_token } = await agent.confirmationToken(proposal.proposal_id);
 *     const outcome = await agent.execute(proposal.proposal_id, confirmation_token);
 *
 * - Decisions carry the `confirm:v1:` key of (proposal id, version), the same bytes as the Java
 *   and Python clients, so a decision sent again (after a timeout, a 503, a restart) is answered
 *   with the first one (`duplicate: true`) instead of deciding twice.
 * - Reads and keyed requests (decisions, executions) are retried with the same key and body after
 *   no answer, 502/503/504 or 409 `idempotency_key_in_flight`, honouring `Retry-After`
 *   ({@link RetryPolicy}). A proposal is never retried: proposing twice makes two proposals.
 * - Every error answer is thrown as a typed {@link SignoffError} carrying the problem's `code`;
 *   {@link OutcomeUnknown} means "read the state", never "propose again".
 */
import { errorFromProblem, KEY_IN_FLIGHT, NO_ANSWER, OutcomeUnknown, SignoffError, UNEXPECTED_ANSWER } from "./errors.js";
import { confirmationIdempotencyKey, randomIdempotencyKey } from "./keys.js";
import { RetryPolicy, retryAfterMs } from "./retry.js";
import type {
  AuditEventView,
  AuditLog,
  ConfirmationTokenView,
  Decision,
  DecisionView,
  DemoLedgerEntry,
  DemoOrder,
  ExecutionOutcomeView,
  ExecutionStatusView,
  InboxView,
  ProposalList,
  ProposalStatus,
  ProposalView,
  WhoAmI,
} from "./types.js";

/** A fixed bearer JWT, or a function asked before every request (for refreshed tokens). */
export type TokenSource = string | (() => string | Promise<string>);

export interface SignoffClientOptions {
  /** `http://` or `https://` origin (and optional path prefix) of the signoff server. */
  baseUrl: string;
  /** The caller's bearer JWT: identity, tenant and roles come from it, never from a body. */
  token: TokenSource;
  /** How long one attempt may wait for its answer before it counts as lost. Default 15 s. */
  timeoutMs?: number;
  retry?: RetryPolicy;
  /** Another `fetch` (a proxy-aware one, a test double). Default: the global `fetch`. */
  fetch?: typeof globalThis.fetch;
  /** What waits between retries and polls; tests pass one that records the waits. */
  sleep?: (ms: number) => Promise<void>;
  /** The clock an HTTP-date Retry-After is measured against. Default `Date.now`. */
  now?: () => number;
}

export interface CallOptions {
  /** Cancels the call; a cancelled keyed request is as unknown as a lost one. */
  signal?: AbortSignal;
}

export interface DecideOptions extends CallOptions {
  decision: Decision;
  /** The version the person saw (`proposal.version`). */
  expectedVersion: number;
  /** Default: `confirm:v1:` of (proposal id, expected version). */
  idempotencyKey?: string;
  /** Required to reject: one of the tool's reasons (`wrong_amount`, ..., `other`). */
  reasonCode?: string | null;
  reason?: string | null;
  /** The values the person typed again for the proposal's `retype` fields. */
  retyped?: Readonly<Record<string, string>> | null;
}

/** A decision's answer, with the key it was sent under. */
export type DecisionResult = DecisionView & { readonly idempotencyKey: string };

/** An execution's answer: `accepted` is true for 202 (prepared, running, unknown, needs attention). */
export type ExecutionOutcome = ExecutionOutcomeView & {
  readonly idempotencyKey: string;
  readonly accepted: boolean;
};

export interface WaitOptions extends CallOptions {
  /** Give up after this long and return what was last read. Default 60 s. */
  timeoutMs?: number;
  /** First pause between reads, doubled up to `maxIntervalMs`. Default 250 ms. */
  intervalMs?: number;
  /** Default 5 s. */
  maxIntervalMs?: number;
}

const STILL_RUNNING: ReadonlySet<string> = new Set(["prepared", "running"]);

interface Request {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  query?: ReadonlyArray<readonly [string, string]>;
  body?: unknown;
  key?: string;
  /** Sent again after no answer / 5xx: reads and keyed requests only, unless set. */
  retry?: boolean;
  signal?: AbortSignal | undefined;
}

interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

export class SignoffClient {
  readonly baseUrl: string;
  readonly #token: TokenSource;
  readonly #timeoutMs: number;
  readonly #retry: RetryPolicy;
  readonly #fetch: typeof globalThis.fetch;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #now: () => number;

  constructor(options: SignoffClientOptions) {
    const { baseUrl } = options;
    if (typeof baseUrl !== "string" || !/^https?:\/\/[^/]/.test(baseUrl)) {
      throw new TypeError("the base URL must be http:// or https://");
    }
    if (options.token === undefined || options.token === "") {
      throw new TypeError("a bearer token (or a function returning one) is required");
    }
    this.baseUrl = baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#timeoutMs = options.timeoutMs ?? 15_000;
    this.#retry = options.retry ?? RetryPolicy.defaults();
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#now = options.now ?? Date.now;
  }

  /** Another caller (the approver, another person) with the same settings. */
  withToken(token: TokenSource): SignoffClient {
    return new SignoffClient({
      baseUrl: this.baseUrl,
      token,
      timeoutMs: this.#timeoutMs,
      retry: this.#retry,
      fetch: this.#fetch,
      sleep: this.#sleep,
      now: this.#now,
    });
  }

  /** `GET /v1/whoami` (`whoAmI`). */
  async whoami(options: CallOptions = {}): Promise<WhoAmI> {
    return (await this.#call<WhoAmI>({ method: "GET", path: "/v1/whoami", signal: options.signal })).body;
  }

  /**
   * `POST /v1/proposals` (`createProposal`): freeze a write into a proposal a person must
   * confirm. Never sent twice: when no answer comes, {@link OutcomeUnknown} is thrown — list
   * the proposals to find it, do not propose again. 422 `clarification_needed` is thrown as
   * {@link ClarificationNeeded}: nothing was created, ask the person.
   */
  async propose(
    tool: string,
    args: Readonly<Record<string, unknown>>,
    options: CallOptions & { rationale?: string | null } = {},
  ): Promise<ProposalView> {
    const body = { tool, arguments: args, rationale: options.rationale ?? null };
    const answer = await this.#call<ProposalView>({
      method: "POST",
      path: "/v1/proposals",
      body,
      retry: false,
      signal: options.signal,
    });
    return answer.body;
  }

  /** `GET /v1/proposals` (`listProposals`): what the caller may see, newest first. */
  async proposals(options: CallOptions & { status?: readonly ProposalStatus[]; limit?: number } = {}): Promise<ProposalView[]> {
    const query: Array<[string, string]> = (options.status ?? []).map((status) => ["status", status]);
    if (options.limit !== undefined) query.push(["limit", String(options.limit)]);
    const answer = await this.#call<ProposalList>({ method: "GET", path: "/v1/proposals", query, signal: options.signal });
    return answer.body.proposals;
  }

  /** `GET /v1/inbox` (`getInbox`), one page: what this person may decide, oldest deadline first. */
  async inbox(options: CallOptions & { limit?: number; after?: string | null } = {}): Promise<InboxView> {
    const query: Array<[string, string]> = [];
    if (options.limit !== undefined) query.push(["limit", String(options.limit)]);
    if (options.after) query.push(["after", options.after]);
    return (await this.#call<InboxView>({ method: "GET", path: "/v1/inbox", query, signal: options.signal })).body;
  }

  /** Every proposal this person may decide now, all inbox pages. */
  async awaitingConfirmation(options: CallOptions = {}): Promise<ProposalView[]> {
    const found: ProposalView[] = [];
    let after: string | null = null;
    do {
      const page: InboxView = await this.inbox({ limit: 100, after, ...options });
      found.push(...page.proposals);
      after = page.next_after ?? null;
    } while (after !== null);
    return found;
  }

  /** `GET /v1/proposals/{id}` (`getProposal`). */
  async proposal(proposalId: string, options: CallOptions = {}): Promise<ProposalView> {
    const path = `/v1/proposals/${segment(proposalId)}`;
    return (await this.#call<ProposalView>({ method: "GET", path, signal: options.signal })).body;
  }

  /** `POST /v1/proposals/{id}/decision` (`decideProposal`), under the `confirm:v1:` key. */
  async decide(proposalId: string, options: DecideOptions): Promise<DecisionResult> {
    const key = options.idempotencyKey ?? (await confirmationIdempotencyKey(proposalId, options.expectedVersion));
    const body = {
      decision: options.decision,
      expected_version: options.expectedVersion,
      reason_code: options.reasonCode ?? null,
      reason: options.reason ?? null,
      retyped: options.retyped ?? null,
    };
    const path = `/v1/proposals/${segment(proposalId)}/decision`;
    const answer = await this.#call<DecisionView>({ method: "POST", path, body, key, signal: options.signal });
    return { ...answer.body, idempotencyKey: key };
  }

  /** Approve exactly the version shown (with the re-typed values a high-risk proposal needs). */
  approve(
    proposal: Pick<ProposalView, "proposal_id" | "version">,
    options: CallOptions & { retyped?: Readonly<Record<string, string>>; idempotencyKey?: string } = {},
  ): Promise<DecisionResult> {
    return this.decide(proposal.proposal_id, { ...options, decision: "approve", expectedVersion: proposal.version });
  }

  /** Reject the version shown, with one of the tool's reason codes. */
  reject(
    proposal: Pick<ProposalView, "proposal_id" | "version">,
    reasonCode: string,
    options: CallOptions & { reason?: string; idempotencyKey?: string } = {},
  ): Promise<DecisionResult> {
    return this.decide(proposal.proposal_id, {
      ...options,
      decision: "reject",
      expectedVersion: proposal.version,
      reasonCode,
    });
  }

  /**
   * `GET /v1/proposals/{id}/confirmation-token` (`getConfirmationToken`): once a person
   * confirmed, the requesting principal (same subject, same agent) picks up its one-time token.
   */
  async confirmationToken(proposalId: string, options: CallOptions = {}): Promise<ConfirmationTokenView> {
    const path = `/v1/proposals/${segment(proposalId)}/confirmation-token`;
    return (await this.#call<ConfirmationTokenView>({ method: "GET", path, signal: options.signal })).body;
  }

  /**
   * `POST /v1/executions` (`executeProposal`): run exactly what was confirmed, at most once.
   * Sent again with the same key after no answer; the server answers a repeated key with the
   * first outcome (`duplicate: true`), and a used token with 409 {@link AlreadyConsumed}
   * (whose `execution_id` member names the execution). `accepted` (202) means the outcome is
   * not final yet: {@link waitForExecution}.
   */
  async execute(
    proposalId: string,
    confirmationToken: string,
    options: CallOptions & { idempotencyKey?: string } = {},
  ): Promise<ExecutionOutcome> {
    const key = options.idempotencyKey ?? randomIdempotencyKey("exec");
    const body = { proposal_id: proposalId, confirmation_token: confirmationToken };
    const answer = await this.#call<ExecutionOutcomeView>({
      method: "POST",
      path: "/v1/executions",
      body,
      key,
      signal: options.signal,
    });
    return { ...answer.body, idempotencyKey: key, accepted: answer.status === 202 };
  }

  /** `GET /v1/executions/{id}` (`getExecution`): its status and, once finished, its receipt. */
  async execution(executionId: string, options: CallOptions = {}): Promise<ExecutionStatusView> {
    const path = `/v1/executions/${segment(executionId)}`;
    return (await this.#call<ExecutionStatusView>({ method: "GET", path, signal: options.signal })).body;
  }

  /**
   * `POST /v1/executions/{id}/retry` (`retryExecution`): a retryable failure runs again with the
   * same request key at the provider, an unknown one is looked up; safe to repeat.
   */
  async retryExecution(executionId: string, options: CallOptions = {}): Promise<ExecutionOutcomeView & { accepted: boolean }> {
    const path = `/v1/executions/${segment(executionId)}/retry`;
    const answer = await this.#call<ExecutionOutcomeView>({ method: "POST", path, retry: true, signal: options.signal });
    return { ...answer.body, accepted: answer.status === 202 };
  }

  /** `POST /v1/proposals/{id}/revoke` (`revokeProposal`). */
  async revoke(proposalId: string, reason: string, options: CallOptions = {}): Promise<ProposalView> {
    const path = `/v1/proposals/${segment(proposalId)}/revoke`;
    return (await this.#call<ProposalView>({ method: "POST", path, body: { reason }, retry: false, signal: options.signal })).body;
  }

  /** `POST /v1/proposals/{id}/cancel` (`cancelProposal`): the requester withdraws it. */
  async cancel(proposalId: string, options: CallOptions = {}): Promise<ProposalView> {
    const path = `/v1/proposals/${segment(proposalId)}/cancel`;
    return (await this.#call<ProposalView>({ method: "POST", path, retry: false, signal: options.signal })).body;
  }

  /** `GET /v1/audit` (`listAuditEvents`, role `auditor`): every event, following the pages. */
  async audit(options: CallOptions & { proposalId?: string } = {}): Promise<AuditEventView[]> {
    const base: Array<[string, string]> = options.proposalId ? [["proposal_id", options.proposalId]] : [];
    const events: AuditEventView[] = [];
    let after: number | null | undefined = 0;
    while (after !== null && after !== undefined) {
      const query: Array<[string, string]> = after ? [...base, ["after", String(after)]] : base;
      const page: AuditLog = (
        await this.#call<AuditLog>({ method: "GET", path: "/v1/audit", query, signal: options.signal })
      ).body;
      events.push(...page.events);
      after = page.next_after;
    }
    return events;
  }

  /**
   * Read the proposal until a person decided (or it expired, was cancelled, ...) or `timeoutMs`
   * passed; answers the last proposal read, whatever its status.
   */
  async waitForDecision(proposalId: string, options: WaitOptions = {}): Promise<ProposalView> {
    return this.#poll(() => this.proposal(proposalId, options), (p) => p.status !== "awaiting_confirmation", options);
  }

  /** Read the execution until it is no longer prepared or running, or `timeoutMs` passed. */
  async waitForExecution(executionId: string, options: WaitOptions = {}): Promise<ExecutionStatusView> {
    return this.#poll(() => this.execution(executionId, options), (e) => !STILL_RUNNING.has(e.execution.status), options);
  }

  /** Demo mode only: `GET /v1/demo/provider/ledger`, the refund provider's ledger of the caller's tenant. */
  async demoLedger(options: CallOptions = {}): Promise<DemoLedgerEntry[]> {
    const path = "/v1/demo/provider/ledger";
    return (await this.#call<{ entries: DemoLedgerEntry[] }>({ method: "GET", path, signal: options.signal })).body.entries;
  }

  /** Demo mode only: `GET /v1/demo/orders/{id}`, the demo shop's order row. */
  async demoOrder(orderId: string, options: CallOptions = {}): Promise<DemoOrder> {
    const path = `/v1/demo/orders/${segment(orderId)}`;
    return (await this.#call<DemoOrder>({ method: "GET", path, signal: options.signal })).body;
  }

  async #poll<T>(read: () => Promise<T>, done: (value: T) => boolean, options: WaitOptions): Promise<T> {
    const deadline = this.#now() + (options.timeoutMs ?? 60_000);
    const maxInterval = options.maxIntervalMs ?? 5_000;
    let interval = options.intervalMs ?? 250;
    for (;;) {
      const value = await read();
      const left = deadline - this.#now();
      if (done(value) || left <= 0 || options.signal?.aborted) return value;
      await this.#sleep(Math.min(interval, left));
      interval = Math.min(interval * 2, maxInterval);
    }
  }

  async #call<T>(request: Request): Promise<Answer<T>> {
    const retryable = request.retry ?? (request.method === "GET" || request.key !== undefined);
    for (let failed = 1; ; failed++) {
      let status: number;
      let headers: Headers;
      let text: string;
      try {
        ({ status, headers, text } = await this.#once(request));
      } catch (cause) {
        const delay = retryable && !request.signal?.aborted ? this.#retry.delayMs(failed, 0) : undefined;
        if (delay === undefined) {
          const what = `${request.method} ${request.path}`;
          throw new OutcomeUnknown(
            0,
            NO_ANSWER,
            `no answer to ${what} after ${failed} attempt(s): ${describe(cause)}; read the state before trying again, never propose again`,
            {},
            request.key,
            { cause },
          );
        }
        await this.#sleep(delay);
        continue;
      }
      if (status >= 200 && status < 300) {
        return { status, headers, body: parseAnswer<T>(status, text, request.key) };
      }
      const error = errorFromProblem(status, problemOf(text), request.key);
      const transient = status === 502 || status === 503 || status === 504 || (status === 409 && error.code === KEY_IN_FLIGHT);
      const delay = retryable && transient ? this.#retry.delayMs(failed, retryAfterMs(headers.get("retry-after"), this.#now())) : undefined;
      if (delay === undefined) throw error;
      await this.#sleep(delay);
    }
  }

  /** One request and its whole answer; throws when no (complete) answer came. */
  async #once(request: Request): Promise<{ status: number; headers: Headers; text: string }> {
    const url = new URL(this.baseUrl + request.path);
    for (const [name, value] of request.query ?? []) url.searchParams.append(name, value);
    const headers: Record<string, string> = {
      Accept: "application/json, application/problem+json",
      Authorization: `Bearer ${await this.#bearer()}`,
    };
    if (request.key !== undefined) headers["Idempotency-Key"] = request.key;
    let body: string | undefined;
    if (request.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(request.body);
    }
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    const response = await this.#fetch(url, { method: request.method, headers, body: body ?? null, signal, redirect: "manual" });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text };
  }

  async #bearer(): Promise<string> {
    const token = typeof this.#token === "function" ? await this.#token() : this.#token;
    if (typeof token !== "string" || token === "" || /[\r\n]/.test(token)) {
      throw new TypeError("the token source gave no usable bearer token");
    }
    return token;
  }
}

function segment(id: string): string {
  if (typeof id !== "string" || id === "") throw new TypeError("an id is required");
  return encodeURIComponent(id);
}

function parseAnswer<T>(status: number, text: string, key: string | undefined): T {
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === "object" && !Array.isArray(body)) return body as T;
  } catch {
    // fall through
  }
  throw new SignoffError(status, UNEXPECTED_ANSWER, `the answer is not the documented JSON object: ${text.slice(0, 200)}`, {}, key);
}

function problemOf(text: string): Record<string, unknown> {
  try {
    const body: unknown = JSON.parse(text);
    if (body !== null && typeof body === "object" && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // not a problem document: keep the start of the body as the detail
  }
  return { detail: text.slice(0, 200) };
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.name}: ${inner.message}` : `${cause.name}: ${cause.message}`;
  }
  return String(cause);
}
