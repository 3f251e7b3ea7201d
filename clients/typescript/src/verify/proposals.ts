/**
 * The per-proposal checks (docs/PROOF-FORMAT.md §8) and the stated claims of each execution.
 *
 * Each kind of approval evidence is one function of `APPROVAL_EVIDENCE` (today: the device
 * assertion of §9); a new kind — an identity provider's vouching, say — is one more function
 * that reads the approval's `data`, reports its own codes and, when it verified, says so on
 * the approver it proves.
 */
import { deviceRefusal, parseDevice } from "./device.js";
import { eventData, type AuditEvent } from "./events.js";
import { jcs } from "./jcs.js";
import type { Findings, ProvenApprover, ProvenExecution } from "./report.js";
import type { TrustRoot } from "./trust.js";

export interface Policy {
  role: string | null;
  approvals: number;
  requester_confirms: boolean;
  device: string | null;
}

export interface ApprovalContext {
  proposalId: string;
  /** The proposal's args digest. */
  argsDigest: string;
  policy: Policy;
  approval: AuditEvent;
  /** The approval's parsed `data`. */
  data: Record<string, unknown>;
  /** Every event the verifier holds (registrations, vouchers). */
  events: readonly AuditEvent[];
  trust: TrustRoot;
  findings: Findings;
  /** The approver entry this approval proves; an evidence check adds what it verified. */
  approver: ProvenApprover;
  counts: { devices: number };
}

export type ApprovalEvidenceCheck = (context: ApprovalContext) => void;

/** §9: a device assertion where the policy asks for one, or wherever one was given. */
export function deviceEvidence(context: ApprovalContext): void {
  const { data, policy, approval, findings, proposalId } = context;
  const at = { seq: approval.seq, proposal_id: proposalId };
  if (data["device"] === undefined || data["device"] === null) {
    if (policy.device === "required") findings.add("device_signature_missing", `the approval by ${approval.actor} carries no device assertion; the policy requires one`, at);
    return;
  }
  const device = parseDevice(data["device"]);
  const refusal = typeof device === "string" ? device : deviceRefusal(device, proposalId, context.argsDigest);
  if (typeof device === "string" || refusal !== null) {
    findings.add("device_signature_invalid", `the device assertion of ${approval.actor}'s approval does not verify: ${refusal}`, at);
    return;
  }
  const enrolled = context.events.filter((e) => e.kind === "passkey.registered" && e.actor === approval.actor && eventData(e)["credential_id"] === device.credential_id);
  const key = jcs(device.public_key);
  if (enrolled.length > 0 && !enrolled.some((e) => safeJcs(eventData(e)["public_key"]) === key)) {
    findings.add("device_key_unknown", `${approval.actor} enrolled the credential ${device.credential_id} with another public key`, at);
    return;
  }
  context.approver.device = device.credential_id;
  context.counts.devices += 1;
}

export const APPROVAL_EVIDENCE: readonly ApprovalEvidenceCheck[] = [deviceEvidence];

const OUTCOMES = new Set(["execution.succeeded", "execution.failed_terminal", "execution.resolved"]);

const text = (value: unknown): string | null => (typeof value === "string" ? value : null);

function safeJcs(value: unknown): string | null {
  try {
    return jcs(value);
  } catch {
    return null;
  }
}

export function policyOf(value: unknown): Policy {
  const p = (typeof value === "object" && value !== null && !Array.isArray(value) ? value : {}) as Record<string, unknown>;
  const approvals = p["approvals"];
  return {
    role: text(p["role"]),
    approvals: typeof approvals === "number" && Number.isSafeInteger(approvals) && approvals >= 1 ? approvals : 1,
    requester_confirms: p["requester_confirms"] === true,
    device: text(p["device"]),
  };
}

export interface ProposalResults {
  proven: ProvenExecution[];
  /** Proposals with an execution that were checked. */
  executions: number;
  devices: number;
}

/**
 * Every proposal whose `proposal.created` is among `events`, in log order. Only executions
 * whose outcome event a checkpoint covers (`seq ≤ coveredUpTo`) are reported as proven.
 */
export function checkProposals(events: readonly AuditEvent[], trust: TrustRoot, findings: Findings, coveredUpTo: number): ProposalResults {
  const results: ProposalResults = { proven: [], executions: 0, devices: 0 };
  const counts = { devices: 0 };
  const byProposal = new Map<string, AuditEvent[]>();
  for (const e of events) {
    if (e.proposal_id === null) continue;
    const list = byProposal.get(e.proposal_id) ?? [];
    list.push(e);
    byProposal.set(e.proposal_id, list);
  }
  const created = events.filter((e) => e.kind === "proposal.created" && e.proposal_id !== null);
  const seen = new Set<string>();
  for (const creation of created) {
    const proposalId = creation.proposal_id as string;
    if (seen.has(proposalId)) continue;
    seen.add(proposalId);
    const proven = checkProposal(proposalId, creation, byProposal.get(proposalId) ?? [], events, trust, findings, counts);
    if (proven === undefined) continue;
    results.executions += 1;
    if (proven !== null && proven.seq <= coveredUpTo) results.proven.push(proven.claims);
  }
  results.devices = counts.devices;
  return results;
}

/** The stated claims of the proposal's outcome; null without one; undefined without any execution. */
function checkProposal(
  proposalId: string,
  creation: AuditEvent,
  own: AuditEvent[],
  events: readonly AuditEvent[],
  trust: TrustRoot,
  findings: Findings,
  counts: { devices: number },
): { claims: ProvenExecution; seq: number } | null | undefined {
  const created = eventData(creation);
  const digest = text(created["args_digest"]) ?? "";
  const policy = policyOf(created["policy"]);
  const requester = text(own.map((e) => (e.kind === "token.issued" ? eventData(e)["subject"] : undefined)).find((s) => typeof s === "string"));
  const approvers: ProvenApprover[] = [];
  const accepted: { actor: string; step: string }[] = [];
  const approvedBy = new Set<string>();
  for (const approval of own.filter((e) => e.kind === "decision.approved")) {
    const data = eventData(approval);
    const at = { seq: approval.seq, proposal_id: proposalId };
    const step = text(data["step"]);
    let ok = true;
    if (data["args_digest"] !== digest) {
      findings.add("approval_digest_mismatch", `the approval by ${approval.actor} names the digest ${String(data["args_digest"])}, not the proposal's ${digest}`, at);
      ok = false;
    }
    if (approval.actor === null || approvedBy.has(approval.actor)) {
      findings.add("duplicate_approver", approval.actor === null ? "an approval by no actor" : `${approval.actor} approved twice`, at);
      ok = false;
    }
    if (approval.actor !== null) approvedBy.add(approval.actor);
    const atRole = policy.role !== null && step === `role:${policy.role}`;
    const asRequester = policy.requester_confirms && step === "requester";
    if (!atRole && !asRequester) {
      findings.add("approval_role_mismatch", `an approval at step ${String(step)}; the policy asks for ${policy.role === null ? "no role" : `role:${policy.role}`}${policy.requester_confirms ? " and requester" : ""}`, at);
      ok = false;
    }
    if (step?.startsWith("role:") && requester !== null && approval.actor === requester) {
      findings.add("separation_of_duties", `the requester ${requester} approved as a role holder`, at);
      ok = false;
    }
    if (step === "requester" && approval.actor !== requester) {
      findings.add("separation_of_duties", `${approval.actor} confirmed as the requester, who is ${requester}`, at);
      ok = false;
    }
    const approver: ProvenApprover = { subject: approval.actor, role: step, decided_at: approval.at, device: null };
    for (const evidence of APPROVAL_EVIDENCE) {
      evidence({ proposalId, argsDigest: digest, policy, approval, data, events, trust, findings, approver, counts });
    }
    approvers.push(approver);
    if (ok && approval.actor !== null && step !== null) accepted.push({ actor: approval.actor, step });
  }
  const executions = own.filter((e) => e.kind === "token.consumed" || (e.kind.startsWith("execution.") && e.kind !== "execution.started"));
  for (const execution of executions) {
    const data = eventData(execution);
    const executed = data["executed_digest"] ?? data["args_digest"];
    if (executed !== undefined && executed !== digest) {
      findings.add("executed_digest_mismatch", `${execution.kind} names the digest ${String(executed)}, not the approved ${digest}`, { seq: execution.seq, proposal_id: proposalId });
    }
  }
  if (executions.length === 0) return undefined;
  const holders = new Set(accepted.filter((a) => policy.role !== null && a.step === `role:${policy.role}`).map((a) => a.actor));
  const needed = policy.role === null ? 0 : policy.approvals;
  const first = executions[0] as AuditEvent;
  if (policy.requester_confirms && !accepted.some((a) => a.step === "requester")) {
    findings.add("executed_without_approval", "executed without the requester's confirmation the policy asks for", { seq: first.seq, proposal_id: proposalId });
  } else if (holders.size < needed) {
    findings.add("executed_without_approval", `executed with ${holders.size} of the ${needed} approvals by role:${policy.role} the policy asks for`, { seq: first.seq, proposal_id: proposalId });
  }
  const outcome = [...own].reverse().find((e) => OUTCOMES.has(e.kind));
  if (outcome === undefined) return null;
  const result = eventData(outcome);
  const consumed = [...own].reverse().find((e) => e.kind === "token.consumed");
  const state = created["state_version"];
  const claims: ProvenExecution = {
    proposal_id: proposalId,
    execution_id: outcome.execution_id,
    op: { tool: text(created["tool"]), version: text(created["tool_version"]) },
    args_digest: text(created["args_digest"]),
    resource: { id: text(created["resource_id"]), state: typeof state === "string" || typeof state === "number" ? state : null },
    approvers,
    request_key: consumed === undefined ? null : text(eventData(consumed)["request_key"]),
    provider_reference: text(result["provider_reference"]),
    outcome: text(result["status"]) ?? outcome.kind.slice("execution.".length),
    completed_at: outcome.at,
  };
  return { claims, seq: outcome.seq };
}
