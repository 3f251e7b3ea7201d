/** Verifying a signed receipt alone (docs/PROOF-FORMAT.md §10). */
import { compactVerify, decodeProtectedHeader, importJWK } from "jose";

import { checkEventTime, checkWitnesses, openTrusted, safeHash } from "./bundle.js";
import { equalBytes, fromBase64, utf8 } from "./bytes.js";
import { openCheckpoint, type Checkpoint } from "./checkpoint.js";
import { checkLog, isObject, requireTrust, verdict, withCosignatures } from "./common.js";
import { ProofFormatError } from "./errors.js";
import { parseEvent, type AuditEvent } from "./events.js";
import { checkExpectation } from "./expect.js";
import { leafHash, verifyInclusion } from "./merkle.js";
import { NoteError, noteOrigin } from "./note.js";
import { sameJson } from "./proposals.js";
import { Findings, type Expectation, type Verdict } from "./report.js";
import { inWindow, type TrustRoot } from "./trust.js";

export const RECEIPT_TYP = "signoff-receipt+jwt";

/** The claims a receipt states, each compared with what its events give (`receipt_mismatch`). */
export const STATED_CLAIMS = [
  "tenant",
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
  "items",
  "mandate",
] as const;

export interface ReceiptOptions {
  expect?: Expectation;
  /** Checkpoint notes the reader already holds: copies of the receipt's add their cosignatures; one of its size with another root is a fork. */
  held?: readonly string[];
}

/** The origin's last segment as PROOF-FORMAT.md §4 encodes a tenant: everything but RFC 3986 unreserved characters. */
export function encodeTenant(tenant: string): string {
  return Array.from(utf8(tenant), (byte) => {
    const c = String.fromCharCode(byte);
    return /[A-Za-z0-9\-._~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }).join("");
}

/**
 * A receipt as it arrives: the compact JWS, a receipt file `{"signed_receipt", "checkpoint"?}`
 * (the checkpoint: the receipt's own with cosignatures gathered after it was signed), or an
 * execution answer of the API (it carries `signed_receipt`).
 */
export function readReceipt(receipt: unknown): { jws: string; checkpoint: string | null } {
  if (typeof receipt === "string") {
    const text = receipt.trim();
    if (!text.startsWith("{")) return { jws: text, checkpoint: null };
    try {
      return readReceipt(JSON.parse(text) as unknown);
    } catch (error) {
      if (error instanceof ProofFormatError) throw error;
      throw new ProofFormatError("the receipt file is not JSON");
    }
  }
  if (!isObject(receipt) || typeof receipt["signed_receipt"] !== "string") throw new ProofFormatError("the receipt file has no 'signed_receipt'");
  return { jws: receipt["signed_receipt"], checkpoint: typeof receipt["checkpoint"] === "string" ? receipt["checkpoint"] : null };
}

/**
 * Verify a signed receipt under `trust` (a trust file or JWKS from the deployment; the receipt's
 * header and any `jwks` beside it are never trusted). Throws `NoTrustRoot` without a trust root,
 * `ProofFormatError` for an input not in the documented format; every other failure is a
 * finding of the verdict.
 */
export async function verifyReceipt(receipt: unknown, trust: unknown, options: ReceiptOptions = {}): Promise<Verdict> {
  const root = await requireTrust(trust, "a receipt");
  const { jws, checkpoint: later } = readReceipt(receipt);
  const held = [...(options.held ?? []), ...(later === null ? [] : [later])];
  const findings = new Findings();
  const nothing = { proven: [], events: 0, checkpoints: 0, covered: 0, uncovered: 0, newest: null, executions: 0, devices: 0 };
  const claims = await signedClaims(jws, root, findings);
  if (claims === null) return verdict("receipt", findings, nothing);
  const evidence = claims["evidence"];
  if (!isObject(evidence)) {
    findings.add("receipt_mismatch", "the receipt carries no evidence");
    return verdict("receipt", findings, nothing);
  }
  const rawEvents = evidence["events"] ?? [];
  if (!Array.isArray(rawEvents)) throw new ProofFormatError("the receipt's evidence.events is not a list");
  const events: AuditEvent[] = rawEvents.map((raw) => {
    const event = parseEvent(raw);
    if (typeof event === "string") throw new ProofFormatError(event);
    return event;
  });
  const tenant = String(claims["tenant"]);

  // The checkpoint: of this tenant's log, one the trust root vouches for, signed inside the key's window.
  const note = withCosignatures(String(evidence["checkpoint"]), held);
  const origin = noteOrigin(note);
  let checkpoint: Checkpoint | null = null;
  if (!origin.endsWith(`/${encodeTenant(tenant)}`)) {
    findings.add("checkpoint_signature", `the receipt's checkpoint is of the log ${JSON.stringify(origin)}, not of tenant ${JSON.stringify(tenant)}`);
  } else {
    checkpoint = openTrusted(note, root, origin, findings, "the receipt's checkpoint");
  }
  let included = 0;
  if (checkpoint !== null) {
    included = checkInclusion(events, evidence["proofs"], checkpoint, findings);
    checkWitnesses(checkpoint, root, findings);
    checkEventTime(checkpoint, Math.max(0, ...events.map((e) => e.at)), findings);
    checkHeld(checkpoint, root, held, findings);
  }

  // The events: of this tenant, each once, and every stated claim what they give.
  const macs = new Map<string, number>();
  for (const event of events) {
    if (event.tenant !== tenant) findings.add("wrong_tenant", `event #${event.seq} (${event.kind}) belongs to tenant ${JSON.stringify(event.tenant)}`, { seq: event.seq });
    if (event.mac === undefined) continue;
    const first = macs.get(event.mac);
    if (first !== undefined) findings.add("event_replayed", `event #${event.seq} repeats event #${first}`, { seq: event.seq });
    else macs.set(event.mac, event.seq);
  }
  const results = checkLog(events, root, findings, Number.MAX_SAFE_INTEGER);
  const proven = results.proven.find((p) => p.proposal_id === claims["proposal_id"]);
  if (proven === undefined) {
    findings.add("receipt_mismatch", "the evidence lacks the proposal or its outcome");
  } else {
    const derived = proven as unknown as Record<string, unknown>;
    for (const name of STATED_CLAIMS) {
      if (!sameJson(claims[name] ?? null, derived[name] ?? null)) {
        findings.add("receipt_mismatch", `the receipt's ${JSON.stringify(name)} is ${show(claims[name])}; its events give ${show(derived[name])}`, { proposal_id: proven.proposal_id });
      }
    }
  }
  checkExpectation(results.proven, options.expect, findings);
  return verdict("receipt", findings, {
    proven: results.proven,
    events: events.length,
    checkpoints: checkpoint === null ? 0 : 1,
    covered: included,
    uncovered: 0,
    newest: checkpoint === null ? null : { size: checkpoint.size, time: checkpoint.time, cosignatures: checkpoint.cosignatures },
    executions: results.executions,
    devices: results.devices,
  });
}

/** The JWS's claims when a trusted key signed them as a receipt; null with `receipt_signature` otherwise; `key_window` for purpose and `iat`. */
async function signedClaims(jws: string, trust: TrustRoot, findings: Findings): Promise<Record<string, unknown> | null> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(jws);
  } catch {
    findings.add("receipt_signature", "not a compact JWS");
    return null;
  }
  const key = trust.keys.find((k) => k.kid === header.kid);
  if (key === undefined) {
    findings.add("receipt_signature", `signed by a key this verifier does not trust (kid ${JSON.stringify(header.kid ?? null)})`);
    return null;
  }
  if (header.typ !== RECEIPT_TYP) {
    findings.add("receipt_signature", `a ${JSON.stringify(header.typ ?? null)} JWS where a ${JSON.stringify(RECEIPT_TYP)} is expected`);
    return null;
  }
  let payload: Uint8Array;
  try {
    // The key's own algorithm only: a header naming another (`none`, HS256) is refused.
    const publicKey = await importJWK({ ...key.jwk, alg: key.alg }, key.alg);
    ({ payload } = await compactVerify(jws, publicKey, { algorithms: [key.alg] }));
  } catch (error) {
    findings.add("receipt_signature", `the signature does not verify with the key ${key.kid} (${(error as Error).message})`);
    return null;
  }
  let claims: unknown = null;
  try {
    claims = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(payload));
  } catch {
    // below
  }
  if (!isObject(claims)) {
    findings.add("receipt_signature", "the JWS payload is not a JSON object");
    return null;
  }
  const iat = claims["iat"];
  if (!key.purposes.has("receipt")) {
    findings.add("key_window", `key ${key.kid} may not sign receipts (its purposes: ${[...key.purposes].join(", ")})`);
  } else if (!inWindow(key, typeof iat === "number" && Number.isSafeInteger(iat) ? iat : null)) {
    findings.add("key_window", `the receipt's iat ${JSON.stringify(iat ?? null)} is outside key ${key.kid}'s validity window`);
  }
  return claims;
}

/** Each event hashes to its hash and is at index `seq − 1` of the checkpoint's tree; the count included. */
function checkInclusion(events: AuditEvent[], proofs: unknown, checkpoint: Checkpoint, findings: Findings): number {
  if (!Array.isArray(proofs) || proofs.length !== events.length) {
    findings.add("not_included", "one inclusion proof per event is needed");
    return 0;
  }
  let included = 0;
  events.forEach((event, i) => {
    const where = `event #${event.seq} (${event.kind})`;
    if (safeHash(event) !== event.hash) findings.add("event_edited", `${where}: content does not match its hash`, { seq: event.seq });
    const proof = proofs[i];
    const path = Array.isArray(proof) ? proof.map((h) => (typeof h === "string" ? fromBase64(h) : null)) : null;
    if (path === null || path.some((h) => h === null || h.length !== 32)) throw new ProofFormatError("a proof hash is not base64");
    if (!verifyInclusion(event.seq - 1, checkpoint.size, leafHash(event.hash), path as Uint8Array[], checkpoint.root)) {
      findings.add("not_included", `${where} is not in checkpoint ${checkpoint.size}`, { seq: event.seq });
    } else {
      included += 1;
    }
  });
  return included;
}

function checkHeld(checkpoint: Checkpoint, trust: TrustRoot, held: readonly string[], findings: Findings): void {
  held.forEach((note, i) => {
    let mine: Checkpoint;
    try {
      mine = openCheckpoint(note, trust, checkpoint.origin);
    } catch (error) {
      if (!(error instanceof NoteError)) throw error;
      findings.add("checkpoint_signature", `held checkpoint ${i + 1}: ${error.message}`);
      return;
    }
    if (mine.size !== checkpoint.size) {
      findings.add("checkpoint_unverifiable", `held checkpoint ${i + 1} (${mine.size}) is not the receipt's (${checkpoint.size}): compare it with an exported bundle instead`);
    } else if (!equalBytes(mine.root, checkpoint.root)) {
      findings.add("fork_detected", `held checkpoint ${i + 1} has another root than the receipt's: a fork`);
    }
  });
}

function show(value: unknown): string {
  if (value === undefined) return "absent";
  const text = JSON.stringify(value);
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}
