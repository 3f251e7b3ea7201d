/**
 * Every error answer of signoff is RFC 9457 `application/problem+json` with a stable `code`;
 * this module turns it into one typed error class per status family (a few codes get their own
 * subclass), carrying the code, the HTTP status, the problem's members and the request's
 * Idempotency-Key. What to do after each:
 *
 * - `OutcomeUnknown` (no answer, or 502/503/504 once the retries are spent): the request may or
 *   may not have landed. Read the proposal or execution; send a keyed request again with the
 *   same key; never make a new proposal for it.
 * - `Conflict` / `VersionConflict` / `AlreadyConsumed`: the state moved on; read it.
 * - everything else: a refusal that changed nothing.
 */
import type { Problem } from "./types.js";

export type ProblemMembers = Readonly<Record<string, unknown>>;

export class SignoffError extends Error {
  override readonly name: string = "SignoffError";
  /** The HTTP status; 0 when no answer came. */
  readonly status: number;
  /** The problem's stable `code` (`http_<status>` for an answer that was not a problem). */
  readonly code: string;
  /** The whole problem document (its extension members: `proposal_id`, `current_version`, ...). */
  readonly problem: ProblemMembers;
  /** The Idempotency-Key the request carried: send the same request later with it. */
  readonly idempotencyKey: string | undefined;

  constructor(
    status: number,
    code: string,
    detail: string,
    problem: ProblemMembers = {},
    idempotencyKey?: string,
    options?: { cause?: unknown },
  ) {
    super(detail, options);
    this.status = status;
    this.code = code;
    this.problem = problem;
    this.idempotencyKey = idempotencyKey;
  }

  /** One extension member of the problem (`member("execution_id")`). */
  member(name: string): unknown {
    return this.problem[name];
  }
}

/** 400: malformed, unknown field, schema, missing Idempotency-Key (`errors` lists the fields). */
export class BadRequest extends SignoffError {
  override readonly name: string = "BadRequest";
}

/** 401: no, expired or untrusted bearer token. */
export class NotAuthenticated extends SignoffError {
  override readonly name: string = "NotAuthenticated";
}

/** 403: `forbidden`, `not_entitled`, `separation_of_duties`, `subject_mismatch`, ... */
export class Forbidden extends SignoffError {
  override readonly name: string = "Forbidden";
}

/** 403 `surface_not_allowed`: this decision must be made through another approval surface. */
export class SurfaceNotAllowed extends Forbidden {
  override readonly name: string = "SurfaceNotAllowed";
}

/** 404: nothing with that id exists for this caller (also another tenant's ids). */
export class NotFound extends SignoffError {
  override readonly name: string = "NotFound";
}

/** 409: the state does not allow this (`invalid_state`, `expired`, `execution_in_progress`, ...). */
export class Conflict extends SignoffError {
  override readonly name: string = "Conflict";
}

/** 409 `version_conflict`: the proposal is not at the version you decided on. */
export class VersionConflict extends Conflict {
  override readonly name: string = "VersionConflict";
}

/** 409 `already_consumed`: the token was used; `member("execution_id")` names the execution. */
export class AlreadyConsumed extends Conflict {
  override readonly name: string = "AlreadyConsumed";
}

/** 422: a refusal of the content (`retype_mismatch`, `idempotency_key_reused`, ...). */
export class Unprocessable extends SignoffError {
  override readonly name: string = "Unprocessable";
}

/** 422 `clarification_needed`: nothing was created; ask the person `message` about `field`. */
export class ClarificationNeeded extends Unprocessable {
  override readonly name: string = "ClarificationNeeded";
  get field(): string | undefined {
    const field = this.problem["field"];
    return typeof field === "string" ? field : undefined;
  }
}

/**
 * The outcome is not known: no answer came (status 0, code `no_answer`), or the server said it
 * is unavailable. Read the state before doing anything; never propose again.
 */
export class OutcomeUnknown extends SignoffError {
  override readonly name: string = "OutcomeUnknown";
}

/** 502/503/504 after the retries were spent (or a Retry-After longer than the policy allows). */
export class ServiceUnavailable extends OutcomeUnknown {
  override readonly name: string = "ServiceUnavailable";
}

export const NO_ANSWER = "no_answer";
export const UNEXPECTED_ANSWER = "unexpected_answer";
export const KEY_IN_FLIGHT = "idempotency_key_in_flight";

type ErrorClass = new (
  status: number,
  code: string,
  detail: string,
  problem?: ProblemMembers,
  idempotencyKey?: string,
  options?: { cause?: unknown },
) => SignoffError;

const BY_CODE: Readonly<Record<string, ErrorClass>> = {
  surface_not_allowed: SurfaceNotAllowed,
  version_conflict: VersionConflict,
  already_consumed: AlreadyConsumed,
  clarification_needed: ClarificationNeeded,
};

function byStatus(status: number): ErrorClass {
  if (status === 0) return OutcomeUnknown;
  if (status === 400) return BadRequest;
  if (status === 401) return NotAuthenticated;
  if (status === 403) return Forbidden;
  if (status === 404) return NotFound;
  if (status === 409) return Conflict;
  if (status === 422) return Unprocessable;
  if (status === 502 || status === 503 || status === 504) return ServiceUnavailable;
  return SignoffError;
}

/** The typed error of an error answer: by `code` where it has a class, else by status. */
export function errorFromProblem(status: number, problem: ProblemMembers | Problem, idempotencyKey?: string): SignoffError {
  const code = typeof problem["code"] === "string" ? problem["code"] : `http_${status}`;
  const detail = typeof problem["detail"] === "string" ? problem["detail"] : `HTTP ${status}`;
  const special = BY_CODE[code];
  // A code's own class only within its status family (its parent class is that status's class):
  // a `surface_not_allowed` that is not a 403 stays what its status says.
  const cls = special !== undefined && byStatus(status) === Object.getPrototypeOf(special) ? special : byStatus(status);
  return new cls(status, code, detail, problem, idempotencyKey);
}
