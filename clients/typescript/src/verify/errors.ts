/**
 * What stops a verification before it starts — the same codes `signoff audit verify` exits 2
 * with. Everything else a verification finds is a `Finding` of its `Verdict`.
 */

/** A bundle, receipt, trust file or JWKS that is not in the documented format. */
export class ProofFormatError extends Error {
  override name = "ProofFormatError";
  readonly code: string = "proof_format";
}

/** Nothing verifies without a trust root obtained apart from what is verified. */
export class NoTrustRoot extends ProofFormatError {
  override name = "NoTrustRoot";
  override readonly code: string = "no_trust_root";
}
