/** Verifying an audit bundle (docs/PROOF-FORMAT.md §6). */
import { fromBase64, isHex64 } from "./bytes.js";
import { backdatedCosignatures, openCheckpoint, quorumMet, SKEW_SECONDS, type Checkpoint } from "./checkpoint.js";
import { eventHash, GENESIS, parseEvent, type AuditEvent } from "./events.js";
import { checkExpectation } from "./expect.js";
import { Frontier, leafHash, verifyConsistency, verifyInclusion } from "./merkle.js";
import { NoteError } from "./note.js";
import { checkProposals } from "./proposals.js";
import { Findings, type Expectation, type Verdict } from "./report.js";
import { parseTrust, type TrustRoot } from "./trust.js";
import { equalBytes } from "./bytes.js";

export interface BundleOptions {
  /** Checkpoint notes the reader already holds: the bundle must be consistent with each (`fork_detected`). */
  held?: readonly string[];
  /** Report events no checkpoint covers instead of failing (`events_uncovered`). */
  allowUncovered?: boolean;
  expect?: Expectation;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export function emptyVerdict(kind: "bundle" | "receipt", findings: Findings): Verdict {
  return { ok: false, kind, findings: findings.failed, notices: findings.notices, proven: [], events: 0, checkpoints: 0, covered: 0, uncovered: 0, newest: null, executions: 0, devices: 0 };
}

/** The trust root, or null (and `no_trust_root`) when there is none. */
export async function trustOrNothing(trust: unknown, findings: Findings): Promise<TrustRoot | null> {
  if (trust === null || trust === undefined) {
    findings.add("no_trust_root", "no trust root: pass the deployment's trust file or JWKS (never the keys inside what is verified)");
    return null;
  }
  return parseTrust(trust);
}

function hashes(value: unknown): Uint8Array[] | null {
  if (!Array.isArray(value)) return null;
  const out: Uint8Array[] = [];
  for (const item of value) {
    const bytes = typeof item === "string" ? fromBase64(item) : null;
    if (bytes === null || bytes.length !== 32) return null;
    out.push(bytes);
  }
  return out;
}

/**
 * Verify an exported bundle (`signoff audit export`) under `trust` — a trust file or JWKS from
 * the deployment, never the bundle's own `jwks`. Throws `TrustFileError` for an unusable trust
 * root; every other failure is a finding of the verdict.
 */
export async function verifyBundle(bundle: unknown, trust: unknown, options: BundleOptions = {}): Promise<Verdict> {
  const findings = new Findings();
  const root = await trustOrNothing(trust, findings);
  if (root === null) return emptyVerdict("bundle", findings);
  const b = isObject(bundle) ? bundle : {};
  const start = isObject(b["start"]) ? b["start"] : null;
  const m = start?.["size"];
  if (
    b["format"] !== "signoff-audit-bundle/1" || typeof b["tenant"] !== "string" || typeof b["origin"] !== "string" ||
    !Array.isArray(b["events"]) || !Array.isArray(b["checkpoints"]) || !b["checkpoints"].every((n) => typeof n === "string") ||
    (b["consistency"] !== undefined && !Array.isArray(b["consistency"])) || typeof m !== "number" || !Number.isSafeInteger(m) || m < 0
  ) {
    findings.add("malformed", "not a signoff-audit-bundle/1 document (format, tenant, origin, start.size, events, checkpoints)");
    return emptyVerdict("bundle", findings);
  }
  const tenant = b["tenant"];
  const origin = b["origin"];
  if (root.logs.length > 0 && !root.logs.includes(origin)) {
    findings.add("origin_untrusted", `the bundle is of the log ${origin}, which the trust root does not list (${root.logs.join(", ")})`);
    return emptyVerdict("bundle", findings);
  }

  // 1. Open every checkpoint.
  const bySize = new Map<number, Checkpoint>();
  const failedSizes = new Set<number>();
  (b["checkpoints"] as string[]).forEach((note, i) => {
    let checkpoint: Checkpoint;
    try {
      checkpoint = openCheckpoint(note, root, origin);
    } catch (error) {
      if (!(error instanceof NoteError)) throw error;
      const size = Number(note.split("\n")[1]);
      if (Number.isSafeInteger(size)) failedSizes.add(size);
      findings.add("checkpoint_signature", `checkpoint ${i + 1} does not open under the trust root: ${error.message}`);
      return;
    }
    const same = bySize.get(checkpoint.size);
    if (same !== undefined && !equalBytes(same.root, checkpoint.root)) {
      findings.add("checkpoint_inconsistent", `two signed checkpoints of size ${checkpoint.size} with different roots`);
    } else if (same === undefined || checkpoint.cosignatures.length > same.cosignatures.length) {
      bySize.set(checkpoint.size, checkpoint);
    }
    for (const c of backdatedCosignatures(checkpoint)) {
      findings.add("checkpoint_time", `${c.name} cosigned checkpoint ${checkpoint.size} at ${c.time}, more than ${SKEW_SECONDS} s before the log signed it (${checkpoint.time})`);
    }
  });

  // 2. Consistency proofs between checkpoints.
  for (const link of (b["consistency"] as unknown[] | undefined) ?? []) {
    const l = isObject(link) ? link : {};
    const oldSize = l["old_size"];
    const newSize = l["new_size"];
    const proof = hashes(l["proof"]);
    if (typeof oldSize !== "number" || typeof newSize !== "number" || proof === null) {
      findings.add("checkpoint_inconsistent", "a consistency proof is not {old_size, new_size, proof: [base64…]}");
      continue;
    }
    const older = bySize.get(oldSize);
    const newer = bySize.get(newSize);
    if (older === undefined || newer === undefined) {
      if (!failedSizes.has(oldSize) && !failedSizes.has(newSize)) findings.add("checkpoint_inconsistent", `a consistency proof from ${oldSize} to ${newSize} names a checkpoint the bundle does not hold`);
      continue;
    }
    if (!verifyConsistency(oldSize, newSize, older.root, newer.root, proof)) {
      findings.add("checkpoint_inconsistent", `the checkpoint of size ${newSize} is not an extension of the one of size ${oldSize}`);
    }
  }

  // The reader's own checkpoints.
  const held = new Map<number, Checkpoint>();
  for (const note of options.held ?? []) {
    try {
      const checkpoint = openCheckpoint(note, root, origin);
      held.set(checkpoint.size, checkpoint);
    } catch (error) {
      if (!(error instanceof NoteError)) throw error;
      findings.add("checkpoint_signature", `the checkpoint you hold does not open under the trust root: ${error.message}`);
    }
  }

  // 3. Where the bundle starts.
  let tree: Frontier | null = new Frontier();
  let prevHash = GENESIS;
  if (m > 0) {
    const anchored = bySize.get(m);
    const anchor = isObject(start?.["anchor"]) ? (start["anchor"] as Record<string, unknown>) : {};
    const frontier = hashes(start?.["frontier"]);
    const proof = hashes(anchor["proof"]);
    tree = frontier === null ? null : Frontier.of(m, frontier);
    prevHash = isHex64(anchor["hash"]) ? anchor["hash"] : GENESIS;
    if (anchored === undefined) {
      findings.add("start_mismatch", `the bundle starts at ${m}, where it holds no signed checkpoint`);
    } else if (tree === null || !equalBytes(tree.root(), anchored.root)) {
      findings.add("start_mismatch", `the frontier does not fold into the root of checkpoint ${m}`);
    } else if (!isHex64(anchor["hash"]) || proof === null || !verifyInclusion(m - 1, m, leafHash(anchor["hash"]), proof, anchored.root)) {
      findings.add("start_mismatch", `the anchor is not event ${m} of checkpoint ${m}`);
    }
  } else if (start?.["frontier"] !== undefined && (hashes(start["frontier"])?.length ?? 1) !== 0) {
    findings.add("start_mismatch", "a bundle that starts at 0 carries a frontier");
  }

  // 4. Walk the events.
  const events: AuditEvent[] = [];
  const macs = new Set<string>();
  let newestAt = Number.NEGATIVE_INFINITY;
  for (const raw of b["events"] as unknown[]) {
    const event = parseEvent(raw);
    if (typeof event === "string") {
      findings.add("malformed", `${event}; the events after it are not checked`);
      break;
    }
    const expected = m + events.length + 1;
    const at = { seq: event.seq, proposal_id: event.proposal_id };
    if (event.tenant !== tenant) findings.add("wrong_tenant", `event ${event.seq} is of the tenant ${event.tenant}, the bundle of ${tenant}`, at);
    let recomputed: string | null;
    try {
      recomputed = eventHash(event);
    } catch {
      recomputed = null;
    }
    if (recomputed !== event.hash) findings.add("event_edited", `event ${event.seq} (${event.kind}) does not hash to its hash: its content was edited`, at);
    if (event.seq !== expected) findings.add("chain_broken", `event ${event.seq} stands where event ${expected} belongs`, at);
    else if (event.prev_hash !== prevHash) findings.add("chain_broken", `event ${event.seq} does not link to the event before it`, at);
    if (event.mac !== undefined) {
      if (macs.has(event.mac)) findings.add("event_replayed", `event ${event.seq} carries the authenticator of an earlier event: a replay`, at);
      macs.add(event.mac);
    }
    events.push(event);
    prevHash = event.hash;
    newestAt = Math.max(newestAt, event.at);
    if (tree === null) continue;
    tree.append(leafHash(event.hash));
    const checkpoint = bySize.get(tree.size);
    if (checkpoint !== undefined) {
      if (!equalBytes(tree.root(), checkpoint.root)) {
        findings.add("checkpoint_mismatch", `the events do not give the root checkpoint ${checkpoint.size} signed: history was rewritten`);
      }
      if (checkpoint.time !== null && newestAt / 1_000_000 > checkpoint.time + SKEW_SECONDS) {
        findings.add("checkpoint_time", `checkpoint ${checkpoint.size} is dated ${checkpoint.time}, before events it covers: a back-dated signature`);
      }
    }
    const mine = held.get(tree.size);
    if (mine !== undefined && !equalBytes(tree.root(), mine.root)) {
      findings.add("fork_detected", `the checkpoint of size ${mine.size} you hold has another root than this log: a fork`);
    }
  }
  const end = m + events.length;

  // The reader's checkpoints outside the events.
  for (const mine of held.values()) {
    if (mine.size > end) findings.add("events_missing", `the checkpoint you hold covers ${mine.size} events, the bundle ends at ${end}`);
    else if (mine.size < m) findings.add("checkpoint_unverifiable", `the checkpoint you hold (size ${mine.size}) is before the bundle's start (${m})`);
    else if (mine.size === m && m > 0 && bySize.get(m) !== undefined && !equalBytes((bySize.get(m) as Checkpoint).root, mine.root)) {
      findings.add("fork_detected", `the checkpoint of size ${m} you hold has another root than this log: a fork`);
    }
  }

  // 5. Coverage.
  const sizes = [...bySize.keys()].sort((x, y) => x - y);
  const newest = sizes.length === 0 ? null : (bySize.get(sizes.at(-1) as number) as Checkpoint);
  let coveredUpTo = m;
  if (newest === null) {
    findings.add("no_checkpoint", "no checkpoint signed by a trusted key: nothing is covered");
  } else {
    coveredUpTo = Math.min(newest.size, end);
    if (newest.size > end) findings.add("events_missing", `checkpoint ${newest.size} covers more events than the bundle's ${end}: its tail was cut`);
    if (end > newest.size) {
      const message = `events ${Math.max(newest.size, m) + 1}…${end} are covered by no checkpoint`;
      if (options.allowUncovered === true) findings.notice("events_uncovered", message);
      else findings.add("events_uncovered", message);
    }
    if (!quorumMet(newest, root)) {
      findings.add("cosignatures_missing", `the newest checkpoint has ${newest.cosignatures.length} of the ${root.witnessQuorum} witness cosignatures the trust root requires`);
    }
  }

  // 6. Per proposal, and what the reader expects.
  const proposals = checkProposals(events, root, findings, coveredUpTo);
  checkExpectation(proposals.proven, options.expect, findings);
  return {
    ok: findings.failed.length === 0,
    kind: "bundle",
    findings: findings.failed,
    notices: findings.notices,
    proven: proposals.proven,
    events: events.length,
    checkpoints: bySize.size,
    covered: Math.max(coveredUpTo - m, 0),
    uncovered: end - Math.max(coveredUpTo, m),
    newest: newest === null ? null : { size: newest.size, time: newest.time, cosignatures: newest.cosignatures },
    executions: proposals.executions,
    devices: proposals.devices,
  };
}
