/** Verifying a signed receipt alone (docs/PROOF-FORMAT.md §10). */
import { compactVerify, decodeProtectedHeader, errors as joseErrors, importJWK } from "jose";

import { emptyVerdict, trustOrNothing } from "./bundle.js";
import { equalBytes, fromBase64, utf8 } from "./bytes.js";
import { backdatedCosignatures, openCheckpoint, quorumMet, SKEW_SECONDS, type Checkpoint } from "./checkpoint.js";
import { eventHash, parseEvent, type AuditEvent } from "./events.js";
import { checkExpectation } from "./expect.js";
import { jcs } from "./jcs.js";
import { leafHash, verifyInclusion } from "./merkle.js";
import { mergeNotes, NoteError, noteOrigin } from "./note.js";
import { checkProposals } from "./proposals.js";
import { Findings, type Expectation, type ProvenExecution, type Verdict } from "./report.js";
import { inWindow, type TrustedKey, type TrustRoot } from "./trust.js";

export const RECEIPT_TYP = "signoff-receipt+jwt";

/** The claims a receipt states, each compared with what its events give (`receipt_mismatch`). */
export const STATED_CLAIMS = [
  "proposal_id",
  "execution_id",
  "op",
  "args_digest",
  "resource",
  "approvers",
  "request_key",
  "provider_reference",
  "outcome",
  "completed_at",
] as const satisfies readonly (keyof ProvenExecution)[];

export interface ReceiptOptions {
  expect?: Expectation;
  /** Checkpoint notes the reader already holds (`fork_detected`, `checkpoint_unverifiable`). */
  held?: readonly string[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The origin's last segment as PROOF-FORMAT.md §4 encodes a tenant: everything but RFC 3986 unreserved characters. */
export function encodeTenant(tenant: string): string {
  return Array.from(utf8(tenant), (byte) => {
    const c = String.fromCharCode(byte);
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }).join("");
}

/**
 * Verify a signed receipt under `trust`: the compact JWS alone, `{"signed_receipt", "checkpoint"}`
 * (a receipt file), or an execution answer carrying `signed_receipt`. Throws `TrustFileError`
 * for an unusable trust root; every other failure is a finding of the verdict.
 */
export async function verifyReceipt(receipt: unknown, trust: unknown, options: ReceiptOptions = {}): Promise<Verdict> {
  const findings = new Findings();
  const root = await trustOrNothing(trust, findings);
  if (root === null) return emptyVerdict("receipt", findings);
  const jws = typeof receipt === "string" ? receipt.trim() : isObject(receipt) && typeof receipt["signed_receipt"] === "string" ? receipt["signed_receipt"] : null;
  const laterCheckpoint = isObject(receipt) && typeof receipt["checkpoint"] === "string" ? receipt["checkpoint"] : null;
  if (jws === null) {
    findings.add("malformed", "not a signed receipt: a compact JWS, or an object whose signed_receipt is one");
    return emptyVerdict("receipt", findings);
  }
  const claims = await signedClaims(jws, root, findings);
  if (claims === null) return emptyVerdict("receipt", findings);
  return checkClaims(claims, laterCheckpoint, root, findings, options);
}

/** The JWS's claims when a trusted `receipt` key signed them inside its window; else null, with the finding. */
async function signedClaims(jws: string, trust: TrustRoot, findings: Findings): Promise<Record<string, unknown> | null> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    findings.add("malformed", "the receipt is not a compact JWS");
    return null;
  }
  const key: TrustedKey | undefined = trust.keys.find((k) => k.kid === header.kid);
  if (key === undefined) {
    findings.add("receipt_signature", `the receipt is signed by the key ${String(header.kid)}, which the trust root does not hold`);
    return null;
  }
  if (header.alg !== key.alg) {
    findings.add("receipt_signature", `the receipt names alg ${String(header.alg)}; the key ${key.kid} is ${key.alg}`);
    return null;
  }
  let payload: Uint8Array;
  try {
    const publicKey = await importJWK({ ...key.jwk, alg: key.alg }, key.alg);
    ({ payload } = await compactVerify(jws, publicKey, { algorithms: [key.alg] }));
  } catch (error) {
    if (error instanceof joseErrors.JOSEError || error instanceof TypeError) {
      findings.add("receipt_signature", `the receipt's signature does not verify with the key ${key.kid}`);
      return null;
    }
    throw error;
  }
  if (header.typ !== RECEIPT_TYP) {
    findings.add("receipt_signature", `the JWS is a ${String(header.typ)}, not a ${RECEIPT_TYP}`);
    return null;
  }
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
  } catch {
    claims = null;
  }
  if (!isObject(claims)) {
    findings.add("malformed", "the receipt's payload is not a JSON object");
    return null;
  }
  const iat = claims["iat"];
  if (!key.purposes.has("receipt")) {
    findings.add("key_window", `the key ${key.kid} may not sign receipts (its purposes: ${[...key.purposes].join(", ") || "none"})`);
  } else if (typeof iat !== "number" || !Number.isSafeInteger(iat) || !inWindow(key, iat)) {
    findings.add("key_window", `the receipt's iat ${String(iat)} is outside the key ${key.kid}'s validity window`);
  }
  return claims;
}

async function checkClaims(claims: Record<string, unknown>, laterCheckpoint: string | null, trust: TrustRoot, findings: Findings, options: ReceiptOptions): Promise<Verdict> {
  const tenant = claims["tenant"];
  const evidence = isObject(claims["evidence"]) ? claims["evidence"] : null;
  const inner = evidence?.["checkpoint"];
  const rawEvents = evidence?.["events"];
  const rawProofs = evidence?.["proofs"];
  if (typeof tenant !== "string" || typeof claims["proposal_id"] !== "string" || typeof inner !== "string" || !Array.isArray(rawEvents) || !Array.isArray(rawProofs) || rawEvents.length !== rawProofs.length) {
    findings.add("malformed", "the receipt has no tenant, proposal_id or evidence {checkpoint, events, proofs} (one proof per event)");
    return emptyVerdict("receipt", findings);
  }
  const proposalId = claims["proposal_id"];
  let note: string = inner;
  if (laterCheckpoint !== null) {
    const merged = mergeNotes(note, laterCheckpoint);
    if (merged === null) findings.add("receipt_mismatch", "the file's checkpoint is not the receipt's (another note text)");
    else note = merged;
  }

  // The checkpoint, under the trust root, for this tenant's log.
  const origin = noteOrigin(note);
  let checkpoint: Checkpoint | null = null;
  const listed = trust.logs.length > 0 ? trust.logs.includes(origin) : origin.endsWith(`/${encodeTenant(tenant)}`);
  if (!listed) {
    findings.add("origin_untrusted", `the receipt's checkpoint is of the log ${origin}, not one the trust root vouches for tenant ${tenant}`);
  } else {
    try {
      checkpoint = openCheckpoint(note, trust, origin);
    } catch (error) {
      if (!(error instanceof NoteError)) throw error;
      findings.add("checkpoint_signature", `the receipt's checkpoint does not open under the trust root: ${error.message}`);
    }
  }
  if (checkpoint !== null) {
    if (!quorumMet(checkpoint, trust)) {
      findings.add("cosignatures_missing", `the receipt's checkpoint has ${checkpoint.cosignatures.length} of the ${trust.witnessQuorum} witness cosignatures the trust root requires`);
    }
    for (const c of backdatedCosignatures(checkpoint)) {
      findings.add("checkpoint_time", `${c.name} cosigned at ${c.time}, more than ${SKEW_SECONDS} s before the log signed (${checkpoint.time})`);
    }
    for (const mine of options.held ?? []) {
      try {
        const held = openCheckpoint(mine, trust, origin);
        if (held.size !== checkpoint.size) findings.add("checkpoint_unverifiable", `the checkpoint you hold is of size ${held.size}, the receipt's of ${checkpoint.size}: compare them with a bundle`);
        else if (!equalBytes(held.root, checkpoint.root)) findings.add("fork_detected", `the checkpoint of size ${held.size} you hold has another root than the receipt's: a fork`);
      } catch (error) {
        if (!(error instanceof NoteError)) throw error;
        findings.add("checkpoint_signature", `the checkpoint you hold does not open under the trust root: ${error.message}`);
      }
    }
  }

  // The events: each hashed, of this tenant, once, included in the checkpoint.
  const events: AuditEvent[] = [];
  const macs = new Set<string>();
  for (let i = 0; i < rawEvents.length; i += 1) {
    const event = parseEvent(rawEvents[i]);
    if (typeof event === "string") {
      findings.add("malformed", event);
      return emptyVerdict("receipt", findings);
    }
    const at = { seq: event.seq, proposal_id: event.proposal_id };
    const previous = events.at(-1);
    if (previous !== undefined && event.seq <= previous.seq) findings.add("malformed", `the evidence's events are not in log order (event ${event.seq} after ${previous.seq})`, at);
    if (event.tenant !== tenant) findings.add("wrong_tenant", `event ${event.seq} is of the tenant ${event.tenant}, the receipt of ${tenant}`, at);
    if (event.proposal_id !== proposalId && event.kind !== "passkey.registered") {
      findings.add("receipt_mismatch", `event ${event.seq} (${event.kind}) is not of the proposal ${proposalId}`, at);
    }
    let recomputed: string | null;
    try {
      recomputed = eventHash(event);
    } catch {
      recomputed = null;
    }
    if (recomputed !== event.hash) findings.add("event_edited", `event ${event.seq} (${event.kind}) does not hash to its hash: its content was edited`, at);
    if (event.mac !== undefined) {
      if (macs.has(event.mac)) findings.add("event_replayed", `event ${event.seq} carries the authenticator of an earlier event: a replay`, at);
      macs.add(event.mac);
    }
    if (checkpoint !== null) {
      const proof = rawProofs[i];
      const path: Uint8Array[] = [];
      let readable = Array.isArray(proof);
      for (const item of readable ? (proof as unknown[]) : []) {
        const bytes = typeof item === "string" ? fromBase64(item) : null;
        if (bytes === null || bytes.length !== 32) readable = false;
        else path.push(bytes);
      }
      if (!readable || !verifyInclusion(event.seq - 1, checkpoint.size, leafHash(event.hash), path, checkpoint.root)) {
        findings.add("not_included", `event ${event.seq} is not in the tree of checkpoint ${checkpoint.size} at index ${event.seq - 1}`, at);
      }
      if (checkpoint.time !== null && event.at / 1_000_000 > checkpoint.time + SKEW_SECONDS) {
        findings.add("checkpoint_time", `the checkpoint is dated ${checkpoint.time}, before event ${event.seq} it covers: a back-dated signature`, at);
      }
    }
    events.push(event);
  }

  // The approval checks, and every stated claim against what the events give.
  const proposals = checkProposals(events, trust, findings, Number.MAX_SAFE_INTEGER);
  const proven = proposals.proven.find((p) => p.proposal_id === proposalId);
  if (proven === undefined) {
    findings.add("receipt_mismatch", `the evidence holds no proposal.created and outcome of the proposal ${proposalId}`);
  } else {
    const derived: Record<string, unknown> = { ...proven };
    if (events.some((e) => e.proposal_id === proposalId && e.tenant !== tenant)) findings.add("receipt_mismatch", "the receipt's tenant is not its events'");
    for (const claim of STATED_CLAIMS) {
      if (!(claim in claims) || same(claims[claim], derived[claim]) === false) {
        findings.add("receipt_mismatch", `the receipt states ${claim} ${show(claims[claim])}; its events give ${show(derived[claim])}`, { proposal_id: proposalId });
      }
    }
  }
  const result = proven === undefined ? [] : [proven];
  checkExpectation(result, options.expect, findings);
  return {
    ok: findings.failed.length === 0,
    kind: "receipt",
    findings: findings.failed,
    notices: findings.notices,
    proven: result,
    events: events.length,
    checkpoints: checkpoint === null ? 0 : 1,
    covered: checkpoint === null ? 0 : events.length,
    uncovered: 0,
    newest: checkpoint === null ? null : { size: checkpoint.size, time: checkpoint.time, cosignatures: checkpoint.cosignatures },
    executions: proposals.executions,
    devices: proposals.devices,
  };
}

function same(a: unknown, b: unknown): boolean {
  try {
    return jcs(a) === jcs(b);
  } catch {
    return false;
  }
}

function show(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}
