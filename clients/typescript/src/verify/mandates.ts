/**
 * Writes under a mandate — a standing approval (docs/PROOF-FORMAT.md §8.1, PROTOCOL rule 18):
 * from one tenant's events alone, each `mandate.debited` came after the mandate's approvals
 * were complete and before it ended or expired, was a write of its tool and digest, named its
 * approvers, kept within its constraints, and left what the log gives.
 */
import { deviceEvidence, passkeysIn, policyOf, type Enrolment, type Policy } from "./proposals.js";
import { eventData, type AuditEvent } from "./events.js";
import type { Findings } from "./report.js";
import type { TrustRoot } from "./trust.js";

/** Events after which a write's amount may not have happened: it is given back. */
const GIVE_BACK = new Set(["execution.failed_terminal", "proposal.revoked", "proposal.expired", "proposal.cancelled"]);

interface Mandate {
  id: string;
  data: Record<string, unknown>;
  policy: Policy;
  /** approver → step, complete approvals in log order. */
  approvers: Map<string, string>;
  activeAt: number | null;
  endedAt: number | null;
  held: number;
  count: number;
}

const isInt = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value);
const record = (value: unknown): Record<string, unknown> => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {});

export function checkMandates(events: readonly AuditEvent[], trust: TrustRoot, findings: Findings, counts: { devices: number }): void {
  const mandates = new Map<string, Mandate>();
  const writes = new Map<string, { tool: unknown; digest: unknown }>();
  const held = new Map<string, { mandate: Mandate; amount: number }>();
  const passkeys = passkeysIn(events);
  for (const event of events) {
    const data = eventData(event);
    const kind = event.kind;
    if (kind === "mandate.created") {
      const id = String(data["mandate_id"]);
      mandates.set(id, { id, data, policy: policyOf(data["policy"]), approvers: new Map(), activeAt: null, endedAt: null, held: 0, count: 0 });
    } else if (kind === "mandate.approved" || kind === "mandate.rejected") {
      const m = mandates.get(String(data["mandate_id"]));
      if (m !== undefined) decision(m, event, data, trust, findings, passkeys, counts);
    } else if (kind === "mandate.revoked" || kind === "mandate.ended" || kind === "mandate.expired") {
      const m = mandates.get(String(data["mandate_id"]));
      if (m !== undefined && m.endedAt === null) m.endedAt = event.seq;
    } else if (kind === "proposal.created" && event.proposal_id !== null) {
      writes.set(event.proposal_id, { tool: data["tool"], digest: data["args_digest"] });
    } else if (kind === "mandate.debited") {
      debit(mandates, writes, held, event, data, findings);
    } else if (GIVE_BACK.has(kind) && event.proposal_id !== null && held.has(event.proposal_id)) {
      const { mandate, amount } = held.get(event.proposal_id) as { mandate: Mandate; amount: number };
      held.delete(event.proposal_id);
      mandate.held -= amount;
      mandate.count -= 1;
    }
  }
}

function decision(m: Mandate, event: AuditEvent, data: Record<string, unknown>, trust: TrustRoot, findings: Findings, passkeys: ReadonlyMap<string, Enrolment>, counts: { devices: number }): void {
  const where = `mandate ${m.id}`;
  const at = { seq: event.seq };
  if ((data["digest"] ?? null) !== (m.data["digest"] ?? null)) {
    findings.add("approval_digest_mismatch", `${where}: #${event.seq} decided another digest`, at);
    return;
  }
  if (event.kind !== "mandate.approved") {
    m.endedAt = m.endedAt ?? event.seq;
    return;
  }
  const person = String(event.actor);
  if (m.approvers.has(person)) {
    findings.add("duplicate_approver", `${where}: #${event.seq} by ${person} again`, at);
    return;
  }
  const step = String(data["step"]);
  if (step === "requester") {
    const requester = record(m.data["requester"])["subject"];
    if (!m.policy.requester_confirms || person !== requester) {
      findings.add("separation_of_duties", `${where}: ${person} confirmed as the requester`, at);
      return;
    }
  } else if (step !== `role:${m.policy.role}`) {
    findings.add("approval_role_mismatch", `${where}: ${person} approved as ${step}`, at);
    return;
  }
  const evidence = { subjectId: m.id, digest: String(m.data["digest"]), policy: m.policy, approval: event, data, passkeys, trust, findings, counts };
  if (!deviceEvidence(evidence)) return;
  m.approvers.set(person, step);
  if (m.activeAt === null && complete(m)) m.activeAt = event.seq;
}

function complete(m: Mandate): boolean {
  const steps = [...m.approvers.values()];
  if (m.policy.requester_confirms && !steps.includes("requester")) return false;
  if (m.policy.role === null) return true;
  return steps.filter((s) => s === `role:${m.policy.role}`).length >= m.policy.approvals;
}

function debit(
  mandates: Map<string, Mandate>,
  writes: Map<string, { tool: unknown; digest: unknown }>,
  held: Map<string, { mandate: Mandate; amount: number }>,
  event: AuditEvent,
  data: Record<string, unknown>,
  findings: Findings,
): void {
  const id = String(data["mandate_id"]);
  const where = `write ${event.proposal_id} under mandate ${id}`;
  const m = mandates.get(id);
  if (m === undefined) {
    findings.note(`${where}: the mandate was created before this range; not checked`);
    return;
  }
  const at = { seq: event.seq, proposal_id: event.proposal_id };
  const c = record(m.data["constraints"]);
  const amount = data["amount_minor"];
  if (m.activeAt === null || m.activeAt > event.seq) findings.add("mandate_not_approved", `${where}: the mandate's approvals were not complete`, at);
  if (m.endedAt !== null && m.endedAt < event.seq) findings.add("mandate_ended", `${where}: after the mandate ended (#${m.endedAt})`, at);
  if (event.at >= (isInt(m.data["expires_at"]) ? m.data["expires_at"] : 0)) findings.add("mandate_expired", `${where}: after the mandate's validity window`, at);
  const write = event.proposal_id === null ? undefined : writes.get(event.proposal_id);
  if (write === undefined || write.tool !== m.data["tool"] || write.digest !== data["args_digest"]) findings.add("mandate_wrong_write", `${where}: not a write of the mandate's tool and digest`, at);
  const named = new Set((Array.isArray(data["approvers"]) ? data["approvers"] : []).map(String));
  if (named.size !== m.approvers.size || [...m.approvers.keys()].some((a) => !named.has(a))) findings.add("mandate_approvers_mismatch", `${where}: names other approvers than the mandate's`, at);
  if ("currency" in c && data["currency"] !== c["currency"]) findings.add("mandate_exceeded", `${where}: in ${String(data["currency"])}, not ${String(c["currency"])}`, at);
  if ("max_amount_minor" in c && !(isInt(amount) && amount <= (c["max_amount_minor"] as number))) findings.add("mandate_exceeded", `${where}: ${String(amount)} is above the maximum ${String(c["max_amount_minor"])}`, at);
  const resource = String(data["resource_id"]);
  if ("resources" in c && !(Array.isArray(c["resources"]) ? c["resources"] : []).some((pattern) => covers(String(pattern), resource))) {
    findings.add("mandate_exceeded", `${where}: ${resource} is not among the mandate's resources`, at);
  }
  if ("agents" in c && !(Array.isArray(c["agents"]) ? c["agents"] : []).includes(data["agent"])) findings.add("mandate_exceeded", `${where}: the agent ${String(data["agent"])} is not allowed`, at);
  const spent = isInt(amount) ? amount : 0;
  m.held += spent;
  m.count += 1;
  if (event.proposal_id !== null) held.set(event.proposal_id, { mandate: m, amount: spent });
  const total = c["total_amount_minor"];
  const most = c["max_count"];
  if (isInt(total) && m.held > total) findings.add("mandate_overspent", `${where}: ${m.held} may have been spent of ${total}`, at);
  if (isInt(most) && m.count > most) findings.add("mandate_overspent", `${where}: ${m.count} writes of at most ${most}`, at);
  const expected = isInt(total) ? total - m.held : null;
  if ((data["remaining_amount_minor"] ?? null) !== expected) {
    findings.add("mandate_budget_mismatch", `${where}: states ${String(data["remaining_amount_minor"])} left, the log gives ${String(expected)}`, at);
  }
}

function covers(pattern: string, resource: string): boolean {
  return pattern.endsWith("*") ? resource.startsWith(pattern.slice(0, -1)) : resource === pattern;
}
