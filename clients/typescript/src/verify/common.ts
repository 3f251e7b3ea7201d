/** What bundles and receipts share: the trust root's arrival, the log checks, copies of checkpoints. */
import { checkMandates } from "./mandates.js";
import { mergeNotes } from "./note.js";
import { checkProposals, type ProposalResults } from "./proposals.js";
import type { AuditEvent } from "./events.js";
import { NoTrustRoot } from "./errors.js";
import { Findings, type Verdict } from "./report.js";
import { parseTrust, type TrustRoot } from "./trust.js";

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The trust root; without one nothing verifies (`NoTrustRoot`), and a bad one is refused (`ProofFormatError`). */
export async function requireTrust(trust: unknown, what: string): Promise<TrustRoot> {
  if (trust === null || trust === undefined) {
    throw new NoTrustRoot(`${what} proves nothing with the keys it carries itself — pass the deployment's trust file (\`signoff keys export-trust\`) or JWKS, obtained apart from what you verify`);
  }
  return parseTrust(trust);
}

/** §8 and §8.1 over the events a verifier holds. */
export function checkLog(events: readonly AuditEvent[], trust: TrustRoot, findings: Findings, coveredUpTo: number): ProposalResults {
  const results = checkProposals(events, trust, findings, coveredUpTo);
  const counts = { devices: 0 };
  checkMandates(events, trust, findings, counts);
  results.devices += counts.devices;
  return results;
}

/** `note` with the signature lines of every copy in `copies` that has the same text (cosignatures gathered later). */
export function withCosignatures(note: string, copies: readonly string[]): string {
  let merged = note;
  for (const copy of copies) merged = mergeNotes(merged, copy) ?? merged;
  return merged;
}

export function verdict(kind: "bundle" | "receipt", findings: Findings, fields: Omit<Verdict, "ok" | "kind" | "findings" | "notes">): Verdict {
  return { ok: findings.failed.length === 0, kind, findings: findings.failed, notes: findings.notes, ...fields };
}
