// Problem → typed error, the retry policy's waits and Retry-After, the catalog reader.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AlreadyConsumed,
  BadRequest,
  ClarificationNeeded,
  Conflict,
  errorFromProblem,
  Forbidden,
  NotAuthenticated,
  NotFound,
  OutcomeUnknown,
  RetryPolicy,
  retryAfterMs,
  ServiceUnavailable,
  SignoffError,
  SurfaceNotAllowed,
  Unprocessable,
  VersionConflict,
} from "@signoff/client";
import { writeTools } from "@signoff/client/ai-sdk";

import { definitions } from "./live.js";

const problem = (status: number, code: string, extra: Record<string, unknown> = {}) => ({
  type: `urn:signoff:problem:${code}`,
  title: code,
  status,
  detail: `about ${code}`,
  code,
  ...extra,
});

test("each status family has its class, and a few codes a subclass, all carrying code and members", () => {
  const cases: Array<[number, string, new (...args: never[]) => SignoffError]> = [
    [400, "invalid_request", BadRequest],
    [401, "not_authenticated", NotAuthenticated],
    [403, "separation_of_duties", Forbidden],
    [403, "surface_not_allowed", SurfaceNotAllowed],
    [404, "not_found", NotFound],
    [409, "invalid_state", Conflict],
    [409, "version_conflict", VersionConflict],
    [409, "already_consumed", AlreadyConsumed],
    [422, "idempotency_key_reused", Unprocessable],
    [422, "clarification_needed", ClarificationNeeded],
    [503, "unavailable", ServiceUnavailable],
    [502, "http_502", ServiceUnavailable],
  ];
  for (const [status, code, cls] of cases) {
    const error = errorFromProblem(status, problem(status, code, { proposal_id: "prop_1" }), "key-1");
    assert.equal(error.constructor, cls, `${status} ${code}`);
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    assert.equal(error.message, `about ${code}`);
    assert.equal(error.member("proposal_id"), "prop_1");
    assert.equal(error.idempotencyKey, "key-1");
  }
  assert.ok(errorFromProblem(503, problem(503, "unavailable")) instanceof OutcomeUnknown, "a 503 means the outcome is unknown");
  assert.equal(errorFromProblem(409, problem(409, "surface_not_allowed")).constructor, Conflict, "a code's class only within its status");
});

test("an answer that is not a problem keeps its status as the code", () => {
  const error = errorFromProblem(418, { detail: "<html>teapot</html>" });
  assert.equal(error.constructor, SignoffError);
  assert.equal(error.code, "http_418");
});

test("waits double from 250 ms, never less than Retry-After, and stop past the maximum or the attempts", () => {
  const policy = RetryPolicy.defaults();
  assert.deepEqual([1, 2, 3].map((failed) => policy.delayMs(failed)), [250, 500, 1000]);
  assert.equal(policy.delayMs(4), undefined);
  assert.equal(policy.delayMs(1, 2000), 2000);
  assert.equal(policy.delayMs(1, 8000), 8000);
  assert.equal(policy.delayMs(1, 9000), undefined, "a longer Retry-After is thrown, not shortened");
  assert.equal(RetryPolicy.none().delayMs(1), undefined);
  assert.throws(() => new RetryPolicy({ maxAttempts: 0 }), RangeError);
});

test("Retry-After reads delta-seconds and an HTTP date, and nothing else", () => {
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(retryAfterMs("2", now), 2000);
  assert.equal(retryAfterMs("Thu, 01 Jan 2026 00:00:05 GMT", now), 5000);
  assert.equal(retryAfterMs("Wed, 31 Dec 2025 23:59:00 GMT", now), 0);
  for (const junk of [null, undefined, "", "-1", "1.5", "soon", "2026-01-01T00:00:05Z"]) assert.equal(retryAfterMs(junk, now), 0, String(junk));
});

test("the catalog's write tools are read from all three formats of `signoff tools --demo`", () => {
  for (const format of ["openai", "openai-responses", "mcp"] as const) {
    const tools = writeTools(definitions(format));
    assert.deepEqual(tools.map((spec) => spec.name), ["refund_order", "add_order_note", "suspend_account"], format);
    const refund = tools[0];
    assert.equal(refund?.description, "Refund money to the customer who paid for an order.");
    assert.equal(refund?.sideEffect, "external");
    assert.deepEqual(refund?.parameters.required, ["order_id", "amount_minor", "currency", "reason"]);
    // The request tool's reserved ids (signoff_mandate_id, signoff_supersedes) are not the tool's own.
    assert.deepEqual(Object.keys(refund?.parameters.properties ?? {}), ["order_id", "amount_minor", "currency", "reason"]);
    assert.equal(refund?.parameters.additionalProperties, false);
  }
  assert.throws(() => writeTools({ nothing: true }), TypeError);
  assert.throws(() => writeTools([{ type: "function", function: { name: "get_proposal_status", parameters: { type: "object" } } }]), TypeError);
});
