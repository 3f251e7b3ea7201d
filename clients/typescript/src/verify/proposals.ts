/**
 * The per-proposal checks (docs/PROOF-FORMAT.md §8) and the stated claims of each execution.
 *
 * Each kind of approval evidence is one function of `APPROVAL_EVIDENCE`: the device assertion
 * of §9 and vouched consent (the identity provider's token, the policy's device rules); a new
 * kind is one more function that reads the approval's `data` and reports its own codes.
 */
import { deviceRefusal, parseDevice } from "./device.js";
import { enrolmentRefusal } from "./enrolment.js";
import { EvidenceRejected, verifyIdpEvidence } from "./idp.js";
import { eventData, type AuditEvent } from "./events.js";
import { jcs } from "./jcs.js";
import type { Findings, ProvenApprover, ProvenExecution } from "./report.js";
import type { TrustRoot } from "./trust.js";

export interface Policy {
  role: string | null;
  approvals: number;
  requester_confirms: boolean;
  device: string | null;
  evidence: string | null;
}

/** What an evidence check is given about one approval. */
export interface ApprovalContext {
  /** The proposal (or mandate) the approval decided, and its digest: what the evidence must bind. */
  subjectId: string;
  digest: string;
  /** The `preview_digest` `proposal.created` recorded: what a payment confirmation's preview must have. */
  previewDigest?: string | null;
  policy: Policy;
  approval: AuditEvent;
  /** The approval's parsed `data`. */
  data: Record<string, unknown>;
  /** (person, credential id) → their last `passkey.registered` among the events: its key, seq and event (§9.1). */
  passkeys: ReadonlyMap<string, Enrolment>;
  /** A proposal's tenant and tool (what an identity provider's token must name); absent for a mandate. */
  bound?: { tenant: string; tool: string | null };
  trust: TrustRoot;
  findings: Findings;
  counts: { devices: number };
}

/** True when the evidence holds (or is not needed); false after reporting why not. */
export type ApprovalEvidenceCheck = (context: ApprovalContext) => boolean;

export const passkeyKey = (actor: string | null, credentialId: unknown): string => JSON.stringify([actor, String(credentialId)]);

export interface Enrolment {
  publicKey: unknown;
  seq: number;
  /** The `passkey.registered` event: what its identity provider's evidence is checked on. */
  event: AuditEvent;
}

/** (person, credential id) → the key, seq and event of the last `passkey.registered` of that pair. */
export function passkeysIn(events: readonly AuditEvent[]): Map<string, Enrolment> {
  const found = new Map<string, Enrolment>();
  for (const e of events) {
    if (e.kind === "passkey.registered" && e.actor !== null) {
      const data = eventData(e);
      found.set(passkeyKey(e.actor, data["credential_id"]), { publicKey: data["public_key"], seq: e.seq, event: e });
    }
  }
  return found;
}

/** §9: a device assertion where the policy requires one, and wherever one was given. */
export function deviceEvidence(context: ApprovalContext): boolean {
  const { data, policy, approval, findings, subjectId } = context;
  const at = { seq: approval.seq, proposal_id: approval.proposal_id };
  const where = `${subjectId}: #${approval.seq}`;
  if (data["device"] === undefined || data["device"] === null) {
    if (policy.device !== "required") return true;
    findings.add("device_signature_missing", `${where} by ${approval.actor} carries no device signature; the policy requires one`, at);
    return false;
  }
  const device = parseDevice(data["device"]);
  const refusal = typeof device === "string" ? device : deviceRefusal(device, subjectId, context.digest, { subject: String(approval.actor), tenant: approval.tenant }, context.previewDigest ?? null);
  if (typeof device === "string" || refusal !== null) {
    findings.add("device_signature_invalid", `${where}: the device assertion does not verify: ${refusal}`, at);
    return false;
  }
  const enrolled = context.passkeys.get(passkeyKey(approval.actor, device.credential_id));
  if (enrolled === undefined || enrolled.seq > approval.seq) {
    findings.add("device_enrolment_missing", `${where}: ${approval.actor} enrolled the credential ${device.credential_id} nowhere before this approval in these events`, at);
    return false;
  }
  if (!sameJson(enrolled.publicKey, device.public_key)) {
    findings.add("device_key_unknown", `${where}: ${approval.actor} enrolled the credential ${device.credential_id} with another public key`, at);
    return false;
  }
  const unvouched = enrolmentRefusal(enrolled.event, context.trust);
  if (unvouched !== null) {
    findings.add("device_enrolment_unvouched", `${where}: ${unvouched}`, at);
    return false;
  }
  context.counts.devices += 1;
  return true;
}

/**
 * Vouched consent (issue 22) on a proposal's approval: `evidence: idp` needs the identity
 * provider's token; without a device assertion, `evidence: device` and, for a person who had
 * enrolled a passkey, `device: or_retype` fail it (`device: required` is `deviceEvidence`'s).
 */
export function vouchedConsent(context: ApprovalContext): boolean {
  const { data, policy, approval, findings, subjectId, bound } = context;
  if (bound === undefined || approval.kind !== "decision.approved") return true;
  const at = { seq: approval.seq, proposal_id: approval.proposal_id };
  const where = `${subjectId}: #${approval.seq} by ${approval.actor}`;
  let idp = false;
  let ok = true;
  if (data["idp"] !== undefined && data["idp"] !== null) {
    try {
      const facts = { proposal_id: subjectId, tenant: bound.tenant, tool: bound.tool, args_digest: context.digest };
      verifyIdpEvidence(data["idp"], context.trust.identityProviders, String(approval.actor), facts, Math.floor(approval.at / 1_000_000));
      idp = true;
    } catch (error) {
      if (!(error instanceof EvidenceRejected)) throw error;
      findings.add(error.code, `${where}: ${error.message}`, at);
      ok = false;
    }
  } else if (policy.evidence === "idp") {
    findings.add("evidence_missing", `${where}: the policy needs the identity provider's token`, at);
    ok = false;
  }
  if ((data["device"] !== undefined && data["device"] !== null) || policy.device === "required") return ok;
  if (policy.evidence === "device" && !idp) {
    findings.add("device_required", `${where}: the policy needs the person's device signature`, at);
    return false;
  }
  if (policy.device === "or_retype" && [...context.passkeys].some(([key, e]) => JSON.parse(key)[0] === approval.actor && e.seq < approval.seq)) {
    findings.add("device_required", `${where}: re-typed, but they had enrolled a passkey, which the policy then requires`, at);
    return false;
  }
  return ok;
}

export const APPROVAL_EVIDENCE: readonly ApprovalEvidenceCheck[] = [deviceEvidence, vouchedConsent];

const OUTCOMES = new Set(["execution.succeeded", "execution.failed_terminal", "execution.resolved"]);

export const text = (value: unknown): string | null => (typeof value === "string" ? value : null);

export function sameJson(a: unknown, b: unknown): boolean {
  try {
    return jcs(a) === jcs(b);
  } catch {
    return false;
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
    evidence: text(p["evidence"]),
  };
}

export interface ProposalResults {
  /** Per proposal with an outcome a checkpoint covers: what its events prove. */
  proven: ProvenExecution[];
  /** Proposals with an execution that were checked. */
  executions: number;
  devices: number;
}

interface Gathered {
  id: string;
  creation: AuditEvent;
  events: AuditEvent[];
  approvals: AuditEvent[];
  executed: AuditEvent[];
  requester: string | null;
  mandate: boolean;
}

/**
 * Every proposal whose `proposal.created` is among `events`, in log order. Only executions
 * whose outcome event a checkpoint covers (`seq ≤ coveredUpTo`) are reported as proven.
 */
export function checkProposals(events: readonly AuditEvent[], trust: TrustRoot, findings: Findings, coveredUpTo: number): ProposalResults {
  const proposals = new Map<string, Gathered>();
  for (const e of events) {
    if (e.proposal_id === null) continue;
    if (e.kind === "proposal.created") {
      if (!proposals.has(e.proposal_id)) {
        proposals.set(e.proposal_id, { id: e.proposal_id, creation: e, events: [e], approvals: [], executed: [], requester: null, mandate: false });
      }
      continue;
    }
    const p = proposals.get(e.proposal_id);
    if (p === undefined) continue;
    p.events.push(e);
    if (e.kind === "decision.approved") p.approvals.push(e);
    else if (e.kind === "token.issued") p.requester = text(eventData(e)["subject"]);
    else if (e.kind === "mandate.debited") p.mandate = true;
    else if (e.kind === "token.consumed" || (e.kind.startsWith("execution.") && e.kind !== "execution.started")) p.executed.push(e);
  }
  const passkeys = passkeysIn(events);
  const results: ProposalResults = { proven: [], executions: 0, devices: 0 };
  const counts = { devices: 0 };
  for (const p of proposals.values()) {
    checkOne(p, trust, findings, passkeys, counts);
    if (p.executed.length > 0) results.executions += 1;
    const claims = statedClaims(p);
    if (claims !== null && claims.seq <= coveredUpTo) results.proven.push(claims.claims);
  }
  results.devices = counts.devices;
  return results;
}

function checkOne(p: Gathered, trust: TrustRoot, findings: Findings, passkeys: ReadonlyMap<string, Enrolment>, counts: { devices: number }): void {
  const created = eventData(p.creation);
  const digest = text(created["args_digest"]);
  const policy = policyOf(created["policy"]);
  const where = `proposal ${p.id}`;
  for (const approval of p.approvals) {
    const named = eventData(approval)["args_digest"] ?? null;
    if (named !== digest) findings.add("approval_digest_mismatch", `${where}: #${approval.seq} approved the digest ${String(named)}, not the proposal's ${digest}`, { seq: approval.seq, proposal_id: p.id });
  }
  for (const execution of p.executed) {
    const data = eventData(execution);
    const executed = "executed_digest" in data ? data["executed_digest"] : data["args_digest"];
    if (executed !== undefined && executed !== null && executed !== digest) {
      findings.add("executed_digest_mismatch", `${where}: #${execution.seq} (${execution.kind}) ran the digest ${String(executed)}, approved ${digest}`, { seq: execution.seq, proposal_id: p.id });
    }
  }
  // Approvers per step: a person once, at a step the policy names, never the requester as a holder.
  const seen = new Set<string>();
  const steps = new Map<string, Set<string>>();
  for (const approval of p.approvals) {
    const person = approval.actor;
    const step = text(eventData(approval)["step"]);
    const at = { seq: approval.seq, proposal_id: p.id };
    if (person === null || seen.has(person)) {
      findings.add("duplicate_approver", `${where}: #${approval.seq} by ${person === null ? "no one" : person} again`, at);
      continue;
    }
    seen.add(person);
    if (step === "requester" && policy.requester_confirms) {
      if (p.requester !== null && person !== p.requester) findings.add("separation_of_duties", `${where}: ${person} confirmed as the requester, who is ${p.requester}`, at);
    } else if (policy.role === null || step !== `role:${policy.role}`) {
      findings.add("approval_role_mismatch", `${where}: ${person} approved as ${String(step)}; the policy names ${policy.role === null ? "no role" : `role:${policy.role}`}${policy.requester_confirms ? " and requester" : ""}`, at);
      continue;
    } else if (person === p.requester) {
      findings.add("separation_of_duties", `${where}: the requester ${person} approved as a role holder`, at);
    }
    const people = steps.get(step as string) ?? new Set<string>();
    people.add(person);
    steps.set(step as string, people);
  }
  if (p.executed.length > 0 && !p.mandate && !complete(policy, steps)) {
    findings.add("executed_without_approval", `${where}: executed before its policy was met`, { seq: (p.executed[0] as AuditEvent).seq, proposal_id: p.id });
  }
  const data = new Map(p.approvals.map((a) => [a, eventData(a)]));
  for (const approval of p.approvals) {
    for (const evidence of APPROVAL_EVIDENCE) {
      const bound = { tenant: p.creation.tenant, tool: text(created["tool"]) };
      evidence({ subjectId: p.id, digest: digest ?? "", previewDigest: text(created["preview_digest"]), policy, approval, data: data.get(approval) ?? {}, passkeys, trust, findings, counts, bound });
    }
  }
}

/** The policy's approvals are there: the requester's confirmation if asked, and `approvals` distinct holders of its role. */
export function complete(policy: Policy, steps: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  if (policy.requester_confirms && (steps.get("requester")?.size ?? 0) === 0) return false;
  return policy.role === null || (steps.get(`role:${policy.role}`)?.size ?? 0) >= policy.approvals;
}

/** What a receipt states, read from the proposal's events alone: null without an outcome. */
function statedClaims(p: Gathered): { claims: ProvenExecution; seq: number } | null {
  const outcome = [...p.events].reverse().find((e) => OUTCOMES.has(e.kind));
  if (outcome === undefined) return null;
  const created = eventData(p.creation);
  const result = eventData(outcome);
  const consumed = p.events.find((e) => e.kind === "token.consumed");
  const state = created["state_version"];
  const approvers: ProvenApprover[] = p.approvals.map((a) => {
    const device = eventData(a)["device"];
    return {
      subject: a.actor,
      role: text(eventData(a)["step"]),
      decided_at: a.at,
      device: typeof device === "object" && device !== null && !Array.isArray(device) ? (device as Record<string, unknown>) : null,
    };
  });
  const claims: ProvenExecution = {
    tenant: p.creation.tenant,
    proposal_id: p.id,
    execution_id: outcome.execution_id,
    op: { tool: text(created["tool"]), version: text(created["tool_version"]) },
    args_digest: text(created["args_digest"]),
    resource: { id: text(created["resource_id"]), state: typeof state === "string" || typeof state === "number" ? state : null },
    approvers,
    request_key: consumed === undefined ? null : text(eventData(consumed)["request_key"]),
    provider_reference: text(result["provider_reference"]),
    outcome: text(result["status"]) || outcome.kind.slice("execution.".length),
    completed_at: outcome.at,
  };
  const reported = p.events.filter((e) => e.execution_id === outcome.execution_id && e.kind.startsWith("execution.") && e.seq <= outcome.seq && "items" in eventData(e));
  const items = reported.length > 0 ? eventData(reported.at(-1) as AuditEvent)["items"] : undefined;
  if (items !== undefined) claims.items = items as unknown[];
  const debited = p.events.find((e) => e.kind === "mandate.debited");
  if (debited !== undefined) {
    const d = eventData(debited);
    const names = ["mandate_id", "mandate_digest", "approvers", "amount_minor", "currency", "remaining_amount_minor", "remaining_count"];
    claims.mandate = Object.fromEntries(names.map((name) => [name, d[name] ?? null]));
  }
  return { claims, seq: outcome.seq };
}
