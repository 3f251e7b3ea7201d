export { SignoffClient } from "./client.js";
export type {
  CallOptions,
  DecideOptions,
  DecisionResult,
  ExecutionOutcome,
  SignoffClientOptions,
  TokenSource,
  WaitOptions,
} from "./client.js";
export {
  AlreadyConsumed,
  BadRequest,
  ClarificationNeeded,
  Conflict,
  errorFromProblem,
  Forbidden,
  NotAuthenticated,
  NotFound,
  OutcomeUnknown,
  ServiceUnavailable,
  SignoffError,
  SurfaceNotAllowed,
  Unprocessable,
  VersionConflict,
} from "./errors.js";
export type { ProblemMembers } from "./errors.js";
export { CONFIRMATION_KEY_PREFIX, confirmationIdempotencyKey, confirmationKeyMessage } from "./keys.js";
export { RetryPolicy, retryAfterMs } from "./retry.js";
export type { RetryPolicyOptions } from "./retry.js";
export type * from "./types.js";
