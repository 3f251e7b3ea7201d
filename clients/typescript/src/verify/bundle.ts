/** Verifying an audit bundle (docs/PROOF-FORMAT.md §6). */
import { equalBytes, fromBase64, isHex64 } from "./bytes.js";
import { backdatedCosignatures, openCheckpoint, quorumMet, SKEW_SECONDS, type Checkpoint } from "./checkpoint.js";
import { checkLog, isObject, requireTrust, verdict, withCosignatures } from "./common.js";
import { ProofFormatError } from "./errors.js";
import { eventHash, GENESIS, parseEvent, type AuditEvent } from "./events.js";
import { checkExpectation } from "./expect.js";
import { Frontier, leafHash, verifyConsistency, verifyInclusion } from "./merkle.js";
import { NoteError } from "./note.js";
import { Findings, type Expectation, type Verdict } from "./report.js";
import type { TrustRoot } from "./trust.js";

export const BUNDLE_FORMAT = "signoff-audit-bundle/1";

export interface BundleOptions {
  /** Checkpoint notes the reader already holds: the bundle must be consistent with each (`fork_detected`); copies of its checkpoints add their cosignatures. */
  held?: readonly string[];
  /** Report events no checkpoint covers instead of failing (`events_uncovered`). */
  allowUncovered?: boolean;
  expect?: Expectation;
}

interface Bundle {
  tenant: string;
  origin: string;
  start: number;
  frontier: Uint8Array[];
  anchorHash: string | null;
  anchorProof: Uint8Array[];
  events: AuditEvent[];
  checkpoints: string[];
  consistency: { oldSize: number; newSize: number; proof: Uint8Array[] }[];
}

function hashes(value: unknown, what: string): Uint8Array[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new ProofFormatError(`the bundle's ${what} is not a list`);
  return value.map((item) => {
    const bytes = typeof item === "string" ? fromBase64(item) : null;
    if (bytes === null || bytes.length !== 32) throw new ProofFormatError(`a hash of the bundle's ${what} is not 32 bytes of base64`);
    return bytes;
  });
}

const int = (value: unknown, what: string): number => {
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) throw new ProofFormatError(`the bundle's ${what} is not an integer`);
  return value;
};

/** The bundle's members and types; `ProofFormatError` when it is not a `signoff-audit-bundle/1`. */
function parseBundle(document: unknown): Bundle {
  if (!isObject(document) || document["format"] !== BUNDLE_FORMAT) throw new ProofFormatError(`not a ${BUNDLE_FORMAT} document`);
  const { tenant, origin, events, checkpoints } = document;
  if (typeof tenant !== "string" || typeof origin !== "string") throw new ProofFormatError("the bundle has no tenant or origin");
  if (!Array.isArray(events) || !Array.isArray(checkpoints) || !checkpoints.every((n) => typeof n === "string")) {
    throw new ProofFormatError("the bundle's events and checkpoints are not lists (of events, of notes)");
  }
  const start = document["start"] ?? { size: 0 };
  if (!isObject(start)) throw new ProofFormatError("the bundle's start is not an object");
  const anchor = start["anchor"] ?? {};
  if (!isObject(anchor)) throw new ProofFormatError("the bundle's start.anchor is not an object");
  const consistency = document["consistency"] ?? [];
  if (!Array.isArray(consistency)) throw new ProofFormatError("the bundle's consistency is not a list");
  return {
    tenant,
    origin,
    start: int(start["size"], "start.size"),
    frontier: hashes(start["frontier"], "start.frontier"),
    anchorHash: typeof anchor["hash"] === "string" ? anchor["hash"] : null,
    anchorProof: hashes(anchor["proof"], "start.anchor.proof"),
    events: events.map((raw) => {
      const event = parseEvent(raw);
      if (typeof event === "string") throw new ProofFormatError(event);
      return event;
    }),
    checkpoints: checkpoints as string[],
    consistency: consistency.map((link) => {
      if (!isObject(link)) throw new ProofFormatError("a consistency proof is not an object");
      return { oldSize: int(link["old_size"], "consistency old_size"), newSize: int(link["new_size"], "consistency new_size"), proof: hashes(link["proof"], "consistency proof") };
    }),
  };
}

/** The checkpoint if the trust root's keys signed it for `origin` inside their window; else null, with the finding. */
export function openTrusted(note: string, trust: TrustRoot, origin: string, findings: Findings, where: string): Checkpoint | null {
  if (trust.logs.length > 0 && !trust.logs.includes(origin)) {
    findings.add("origin_untrusted", `${where}: the log ${origin} is not one the trust root lists`);
    return null;
  }
  try {
    return openCheckpoint(note, trust, origin);
  } catch (error) {
    if (!(error instanceof NoteError)) throw error;
    findings.add("checkpoint_signature", `${where}: ${error.message}`);
    return null;
  }
}

/** The newest checkpoint's witnesses: the quorum, and no cosignature more than 300 s before the log signed. */
export function checkWitnesses(checkpoint: Checkpoint, trust: TrustRoot, findings: Findings): void {
  if (!quorumMet(checkpoint, trust)) {
    const have = checkpoint.cosignatures.map((c) => c.name).sort().join(", ") || "none";
    findings.add("cosignatures_missing", `checkpoint ${checkpoint.size} has ${checkpoint.cosignatures.length} of the ${trust.witnessQuorum} witness cosignatures required (${have})`);
  }
  for (const c of backdatedCosignatures(checkpoint)) {
    findings.add("checkpoint_time", `${c.name} cosigned checkpoint ${checkpoint.size} at ${c.time}, more than ${SKEW_SECONDS} s before the log signed it (${checkpoint.time})`);
  }
}

/** No event a checkpoint covers is dated after its signed time (⌊at / 10⁶⌋ > time + 300). */
export function checkEventTime(checkpoint: Checkpoint, latestAt: number, findings: Findings): void {
  if (checkpoint.time !== null && Math.floor(latestAt / 1_000_000) > checkpoint.time + SKEW_SECONDS) {
    findings.add("checkpoint_time", `checkpoint ${checkpoint.size} says it was signed at ${checkpoint.time}, before the events it covers (${Math.floor(latestAt / 1_000_000)}): a back-dated signature`);
  }
}

/**
 * Verify an exported bundle (`signoff audit export`) under `trust` — a trust file or JWKS from
 * the deployment, never the bundle's own `jwks`. Throws `NoTrustRoot` without a trust root and
 * `ProofFormatError` for a trust root or bundle not in the documented format; every other
 * failure is a finding of the verdict.
 */
export async function verifyBundle(document: unknown, trust: unknown, options: BundleOptions = {}): Promise<Verdict> {
  const root = await requireTrust(trust, "a bundle");
  const bundle = parseBundle(document);
  const findings = new Findings();
  const held = options.held ?? [];
  const m = bundle.start;

  // 1. Every checkpoint (held copies add their cosignatures); one root per size.
  const bySize = new Map<number, Checkpoint>();
  bundle.checkpoints.forEach((note, i) => {
    const checkpoint = openTrusted(withCosignatures(note, held), root, bundle.origin, findings, `checkpoint ${i + 1}`);
    if (checkpoint === null) return;
    const same = bySize.get(checkpoint.size);
    if (same !== undefined && !equalBytes(same.root, checkpoint.root)) findings.add("checkpoint_inconsistent", `two roots signed for size ${checkpoint.size}`);
    bySize.set(checkpoint.size, checkpoint);
  });
  const mine = new Map<number, Checkpoint>();
  held.forEach((note, i) => {
    const where = `held checkpoint ${i + 1}`;
    const checkpoint = openTrusted(note, root, bundle.origin, findings, where);
    if (checkpoint === null) return;
    if (checkpoint.size < m) {
      findings.add("checkpoint_unverifiable", `${where} (${checkpoint.size}) is before this bundle's start (${m}): export from size ${checkpoint.size} or earlier`);
      return;
    }
    mine.set(checkpoint.size, checkpoint);
  });

  // 2. Consistency between checkpoints.
  for (const link of bundle.consistency) {
    const older = bySize.get(link.oldSize);
    const newer = bySize.get(link.newSize);
    if (older === undefined || newer === undefined) findings.add("checkpoint_inconsistent", `proof ${link.oldSize}→${link.newSize}: no checkpoint`);
    else if (!verifyConsistency(link.oldSize, link.newSize, older.root, newer.root, link.proof)) {
      findings.add("checkpoint_inconsistent", `checkpoint ${link.newSize} does not extend checkpoint ${link.oldSize}`);
    }
  }

  // 3. The start of the range: the frontier folds into checkpoint m, whose event m is the anchor.
  let tree = new Frontier();
  let prev = GENESIS;
  if (m > 0) {
    const fitted = Frontier.of(m, bundle.frontier);
    prev = bundle.anchorHash ?? "";
    const anchored = bySize.get(m);
    if (fitted === null) {
      findings.add("start_mismatch", `the frontier does not fit size ${m}`);
    } else {
      tree = fitted;
      if (anchored === undefined || !equalBytes(tree.root(), anchored.root)) {
        findings.add("start_mismatch", `the range does not start at a signed checkpoint (${m})`);
      } else if (!isHex64(bundle.anchorHash) || !verifyInclusion(m - 1, m, leafHash(bundle.anchorHash), bundle.anchorProof, anchored.root)) {
        findings.add("start_mismatch", `event #${m} is not proven in checkpoint ${m}`);
      }
    }
  }

  // 4. One walk: hash, link, authenticator, and the root at every checkpoint size.
  const macs = new Map<string, number>();
  let latestAt = 0;
  for (const event of bundle.events) {
    const where = `event #${event.seq} (${event.kind})`;
    const at = { seq: event.seq, proposal_id: event.proposal_id };
    if (event.tenant !== bundle.tenant) findings.add("wrong_tenant", `${where} belongs to tenant ${JSON.stringify(event.tenant)}`, at);
    if (event.seq !== tree.size + 1 || event.prev_hash !== prev) findings.add("chain_broken", `${where}: gap or broken link before it`, at);
    if (safeHash(event) !== event.hash) findings.add("event_edited", `${where}: content does not match its hash`, at);
    if (event.mac !== undefined) {
      const first = macs.get(event.mac);
      if (first !== undefined) findings.add("event_replayed", `${where} repeats event #${first}`, at);
      else macs.set(event.mac, event.seq);
    }
    latestAt = Math.max(latestAt, event.at);
    tree.append(leafHash(event.hash));
    prev = event.hash;
    const signed = bySize.get(tree.size);
    if (signed !== undefined) {
      if (!equalBytes(signed.root, tree.root())) findings.add("checkpoint_mismatch", `checkpoint ${tree.size} signed other events than these (history rewritten)`);
      checkEventTime(signed, latestAt, findings);
    }
    const yours = mine.get(tree.size);
    if (yours !== undefined && !equalBytes(yours.root, tree.root())) {
      findings.add("fork_detected", `the checkpoint of size ${tree.size} you hold has another root than this log: a fork, or history rewritten since`);
    }
  }
  for (const size of mine.keys()) {
    if (size > tree.size) findings.add("events_missing", `a checkpoint you hold covers ${size} events; the bundle ends at #${tree.size}`);
  }

  // 5. Coverage and the newest checkpoint's witnesses.
  const end = m + bundle.events.length;
  const last = Math.max(0, ...bySize.keys());
  if (last > end) findings.add("events_missing", `checkpoint ${last} covers ${last} events; the bundle ends at #${end}`);
  const covered = Math.max(0, Math.min(last, end) - m);
  const uncovered = Math.max(0, end - Math.max(last, m));
  const newest = bySize.get(last);
  if (newest === undefined) {
    findings.add("no_checkpoint", "no checkpoint signed by a trusted key: nothing is vouched");
  } else {
    checkWitnesses(newest, root, findings);
    if (uncovered > 0) {
      const message = `${uncovered} events after checkpoint ${last} (#${Math.max(last, m) + 1}…#${end}) are not covered by any signed checkpoint`;
      if (options.allowUncovered === true) findings.note(`${message} (allowed)`);
      else findings.add("events_uncovered", message);
    }
  }

  // 6. Per proposal, per mandate, and what the reader expects.
  const results = checkLog(bundle.events, root, findings, newest === undefined ? 0 : last);
  checkExpectation(results.proven, options.expect, findings);
  return verdict("bundle", findings, {
    proven: results.proven,
    events: bundle.events.length,
    checkpoints: bySize.size,
    covered,
    uncovered,
    newest: newest === undefined ? null : { size: newest.size, time: newest.time, cosignatures: newest.cosignatures },
    executions: results.executions,
    devices: results.devices,
  });
}

export function safeHash(event: AuditEvent): string | null {
  try {
    return eventHash(event);
  } catch {
    return null;
  }
}
