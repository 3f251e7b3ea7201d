/** What a verification found and what it proved (docs/PROOF-FORMAT.md §8, "stated claims"). */

/** The stable codes of docs/PROOF-FORMAT.md, the same `signoff audit verify` prints. */
export type FindingCode =
  | "origin_untrusted"
  | "checkpoint_signature"
  | "checkpoint_time"
  | "checkpoint_inconsistent"
  | "checkpoint_mismatch"
  | "checkpoint_unverifiable"
  | "fork_detected"
  | "start_mismatch"
  | "no_checkpoint"
  | "events_missing"
  | "events_uncovered"
  | "cosignatures_missing"
  | "event_edited"
  | "chain_broken"
  | "wrong_tenant"
  | "event_replayed"
  | "approval_digest_mismatch"
  | "executed_digest_mismatch"
  | "duplicate_approver"
  | "approval_role_mismatch"
  | "separation_of_duties"
  | "executed_without_approval"
  | "device_signature_missing"
  | "device_signature_invalid"
  | "device_key_unknown"
  | "device_enrolment_unvouched"
  | "device_enrolment_missing"
  | "device_required"
  | "evidence_missing"
  | "evidence_invalid"
  | "evidence_mismatch"
  | "receipt_signature"
  | "key_window"
  | "receipt_mismatch"
  | "not_included"
  | "not_the_expected_proof"
  | "mandate_not_approved"
  | "mandate_ended"
  | "mandate_expired"
  | "mandate_wrong_write"
  | "mandate_approvers_mismatch"
  | "mandate_exceeded"
  | "mandate_overspent"
  | "mandate_budget_mismatch";

export interface Finding {
  code: FindingCode;
  message: string;
  /** The event it is about, when there is one. */
  seq?: number;
  proposal_id?: string;
}

export interface ProvenApprover {
  subject: string | null;
  /** The step: `role:<role>` or `requester`. */
  role: string | null;
  /** When (µs since the epoch, the event's `at`). */
  decided_at: number;
  /** The approval's device assertion (docs/PROOF-FORMAT.md §9) as recorded, or null. */
  device: Record<string, unknown> | null;
}

/** One execution the verifier vouches for: the stated claims, each read from the signed events. */
export interface ProvenExecution {
  tenant: string;
  proposal_id: string;
  execution_id: string | null;
  op: { tool: string | null; version: string | null };
  args_digest: string | null;
  resource: { id: string | null; state: string | number | null };
  approvers: ProvenApprover[];
  request_key: string | null;
  provider_reference: string | null;
  outcome: string;
  /** When the last outcome event was written (µs). */
  completed_at: number;
  /** A batch: each item's outcome, request key and provider reference, as the last outcome event that reported them states them. */
  items?: unknown[];
  /** A write under a mandate (standing approval): the mandate, its approvers, what was left after it. */
  mandate?: Record<string, unknown>;
}

export interface CheckpointSummary {
  size: number;
  /** When the log signed it (seconds), or null. */
  time: number | null;
  cosignatures: { name: string; time: number }[];
}

export interface Verdict {
  /** True only when every check passed: the one thing to act on. */
  ok: boolean;
  kind: "bundle" | "receipt";
  /** Every failed check; empty when `ok`. */
  findings: Finding[];
  /** Reported without failing: events no checkpoint covers (when allowed), a passkey enrolled before the range. */
  notes: string[];
  /** What was proven (empty claims when not `ok` — never act on them then). */
  proven: ProvenExecution[];
  events: number;
  checkpoints: number;
  covered: number;
  uncovered: number;
  newest: CheckpointSummary | null;
  executions: number;
  devices: number;
}

/** What the reader expects the proof to be of (docs/PROOF-FORMAT.md §10). */
export interface Expectation {
  /** The proposal id a proven execution must have. */
  proposal?: string;
  /** The args digest (64 lowercase hex) a proven execution must have. */
  digest?: string;
  /** The canonical arguments: the digest is recomputed with the proven tool and version. */
  args?: unknown;
}

export class Findings {
  readonly failed: Finding[] = [];
  readonly notes: string[] = [];

  add(code: FindingCode, message: string, at: { seq?: number; proposal_id?: string | null } = {}): void {
    const finding: Finding = { code, message };
    if (at.seq !== undefined) finding.seq = at.seq;
    if (at.proposal_id !== undefined && at.proposal_id !== null) finding.proposal_id = at.proposal_id;
    this.failed.push(finding);
  }

  note(message: string): void {
    this.notes.push(message);
  }

  has(code: FindingCode): boolean {
    return this.failed.some((f) => f.code === code);
  }
}

const iso = (seconds: number | null): string => (seconds === null ? "no signed time" : new Date(seconds * 1000).toISOString().replace(/\.\d{3}Z$/, "Z"));
const isoMicros = (micros: number): string => iso(Math.floor(micros / 1_000_000));

/**
 * The verdict as `signoff audit verify` prints it: what was checked, what it proves, the notes,
 * one `BROKEN [code] …` line per failed check, then `verified` or `NOT verified: N findings`.
 */
export function formatVerdict(verdict: Verdict, label: string): string {
  const lines: string[] = [];
  lines.push(`${verdict.kind} ${label}: ${verdict.events} events, ${verdict.checkpoints} signed checkpoints, ${verdict.covered} covered, ${verdict.uncovered} not covered by a checkpoint`);
  if (verdict.newest !== null) {
    const cosigned = [...verdict.newest.cosignatures].sort((a, b) => (a.name < b.name ? -1 : 1)).map((c) => `${c.name} at ${iso(c.time)}`).join(", ");
    lines.push(`  newest checkpoint signed ${iso(verdict.newest.time)}; cosigned by ${cosigned === "" ? "no witness" : cosigned}`);
  }
  lines.push(`  ${verdict.executions} executions checked, ${verdict.devices} device signatures verified`);
  for (const p of verdict.proven) {
    lines.push(`  proves proposal ${p.proposal_id}: ${p.op.tool} v${p.op.version}, args digest ${p.args_digest}, resource ${p.resource.id} (state ${p.resource.state})`);
    for (const a of p.approvers) {
      lines.push(`    approved by ${a.subject} as ${a.role} at ${isoMicros(a.decided_at)}${a.device === null ? "" : ", device-signed"}`);
    }
    lines.push(`    outcome ${p.outcome}, provider reference ${p.provider_reference}, execution ${p.execution_id}, at ${isoMicros(p.completed_at)}`);
  }
  for (const note of verdict.notes) lines.push(`  note: ${note}`);
  for (const f of verdict.findings) lines.push(`BROKEN [${f.code}] ${f.message}`);
  lines.push(verdict.ok ? "verified" : `NOT verified: ${verdict.findings.length} findings`);
  return lines.join("\n");
}
