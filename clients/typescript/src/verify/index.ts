/**
 * `@signoff/client/verify`: the second independent verifier of signoff's proofs, written from
 * docs/PROOF-FORMAT.md — signed receipts and audit bundles, checked offline under a trust root
 * from the deployment (never the keys inside what is verified).
 *
 *     import { verifyReceipt } from "@signoff/client/verify";
 *     const verdict = await verifyReceipt(outcome.signed_receipt, trustFileJson, { expect: { proposal: id } });
 *     if (!verdict.ok) throw new Error(verdict.findings.map((f) => f.code).join(", "));
 *
 * Node ≥ 20 (`node:crypto`), and `jose` for the JWS: the only runtime dependency of this
 * package, and only of this entry point.
 */
export { verifyBundle, BUNDLE_FORMAT } from "./bundle.js";
export type { BundleOptions } from "./bundle.js";
export { verifyReceipt, readReceipt, encodeTenant, RECEIPT_TYP, STATED_CLAIMS } from "./receipt.js";
export type { ReceiptOptions } from "./receipt.js";
export { NoTrustRoot, ProofFormatError } from "./errors.js";
export { parseTrust, parseVkey } from "./trust.js";
export type { Purpose, TrustedKey, TrustedWitness, TrustRoot } from "./trust.js";
export { formatVerdict } from "./report.js";
export type { CheckpointSummary, Expectation, Finding, FindingCode, ProvenApprover, ProvenExecution, Verdict } from "./report.js";
export { argsDigest } from "./expect.js";
export { CanonicalizationError, jcs } from "./jcs.js";
export { eventHash } from "./events.js";
export type { AuditEvent } from "./events.js";
export { openCheckpoint } from "./checkpoint.js";
export type { Checkpoint, Cosignature } from "./checkpoint.js";
export { APPROVAL_EVIDENCE, deviceEvidence, vouchedConsent } from "./proposals.js";
export type { ApprovalContext, ApprovalEvidenceCheck, Policy } from "./proposals.js";
export { verifyConsistency, verifyInclusion } from "./merkle.js";
