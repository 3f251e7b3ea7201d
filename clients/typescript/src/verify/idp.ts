/**
 * An identity provider's signed token (docs/PROOF-FORMAT.md §2, §8, §9.1), verified with the
 * keys the trust file lists for its issuer, with `node:crypto` (RS256, PS256, ES256, ES384,
 * EdDSA): an approval's `idp` token, whose one `signoff_proposal` authorization_details entry
 * names this proposal, and a passkey enrolment's ID token (enrolment.ts) — one check for both.
 */
import { constants, createPublicKey, verify, type KeyObject } from "node:crypto";

import { fromBase64url, utf8 } from "./bytes.js";
import { ProofFormatError } from "./errors.js";
import type { FindingCode } from "./report.js";

export const AUTHORIZATION_TYPE = "signoff_proposal";
const BOUND = ["proposal_id", "tenant", "tool", "args_digest"] as const;
const SKEW_SECONDS = 300;
const DEFAULT_ALG: Record<string, string> = { RSA: "RS256", EC: "ES256", "EC P-384": "ES384", OKP: "EdDSA" };

export interface ProviderKey {
  kid: string | null;
  alg: string;
  key: KeyObject;
}

export interface IdentityProvider {
  issuer: string;
  keys: ProviderKey[];
  /** The clients an ID token may be issued to (none: any). */
  audiences: string[];
  /** The claim that names the person (default `sub`). */
  subjectClaim: string;
  /** The claim that names the tenant, when the provider has one. */
  tenantClaim: string | null;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** One `identity_providers` entry of a trust file: `{issuer, jwks: {keys}, audiences?, subject_claim?, tenant_claim?}` (encryption keys skipped). */
export function parseProvider(entry: unknown): IdentityProvider {
  if (!isObject(entry) || typeof entry["issuer"] !== "string") throw new ProofFormatError("each identity provider is {issuer, jwks}");
  const jwks = entry["jwks"];
  if (!isObject(jwks) || !Array.isArray(jwks["keys"])) throw new ProofFormatError(`identity provider ${entry["issuer"]} has no jwks`);
  const keys: ProviderKey[] = [];
  for (const jwk of jwks["keys"]) {
    if (!isObject(jwk)) throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} is not an object`);
    if ((jwk["use"] ?? "sig") !== "sig") continue;
    const alg = typeof jwk["alg"] === "string" ? jwk["alg"] : (DEFAULT_ALG[`${String(jwk["kty"])} ${String(jwk["crv"])}`] ?? DEFAULT_ALG[String(jwk["kty"])]);
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk as never, format: "jwk" });
    } catch {
      throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} does not load`);
    }
    if (alg === undefined) throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} has no usable alg`);
    keys.push({ kid: typeof jwk["kid"] === "string" ? jwk["kid"] : null, alg, key });
  }
  const audiences = entry["audiences"] ?? [];
  const subjectClaim = entry["subject_claim"] ?? "sub";
  const tenantClaim = entry["tenant_claim"] ?? null;
  if (!Array.isArray(audiences) || !audiences.every((a) => typeof a === "string") || typeof subjectClaim !== "string" || (tenantClaim !== null && typeof tenantClaim !== "string")) {
    throw new ProofFormatError(`identity provider ${entry["issuer"]}: audiences is a list of strings, subject_claim and tenant_claim strings`);
  }
  return { issuer: entry["issuer"], keys, audiences: audiences as string[], subjectClaim: subjectClaim || "sub", tenantClaim: tenantClaim || null };
}

export class EvidenceRejected extends Error {
  constructor(readonly code: FindingCode, message: string) {
    super(message);
  }
}

/** The verified claims of an approval's `idp` evidence, or throws `EvidenceRejected`. */
export function verifyIdpEvidence(
  evidence: unknown,
  providers: readonly IdentityProvider[],
  subject: string,
  proposal: Record<(typeof BOUND)[number], unknown>,
  decidedAt: number,
): Record<string, unknown> {
  const token = isObject(evidence) ? evidence["token"] : undefined;
  if (typeof token !== "string") throw new EvidenceRejected("evidence_invalid", "the idp evidence carries no token");
  const { provider, claims } = providerClaims(token, providers, false);
  const person = claims[provider.subjectClaim];
  if (person !== subject) throw new EvidenceRejected("evidence_mismatch", `the provider's token is for ${JSON.stringify(person)}`);
  const iat = claims["iat"];
  if (typeof iat !== "number" || !Number.isSafeInteger(iat) || iat > decidedAt + SKEW_SECONDS) {
    throw new EvidenceRejected("evidence_invalid", "the token was issued after the decision");
  }
  const details = Array.isArray(claims["authorization_details"]) ? claims["authorization_details"] : [];
  const ours = details.filter((d) => isObject(d) && d["type"] === AUTHORIZATION_TYPE) as Record<string, unknown>[];
  if (ours.length !== 1) throw new EvidenceRejected("evidence_mismatch", `the token's authorization_details hold ${ours.length} ${AUTHORIZATION_TYPE} entries, not one`);
  const entry = ours[0] as Record<string, unknown>;
  for (const name of BOUND) {
    if (entry[name] !== proposal[name]) throw new EvidenceRejected("evidence_mismatch", `the provider's authorization_details name another ${name} than the log`);
  }
  if (typeof entry["version"] !== "number" || !Number.isSafeInteger(entry["version"])) {
    throw new EvidenceRejected("evidence_mismatch", "the authorization_details name no version");
  }
  return claims;
}

/**
 * The provider that signed `token` and its verified claims, or throws `EvidenceRejected`; with
 * `audiences`, the token's `aud` must be one the provider pins (when it pins any).
 */
export function providerClaims(token: string, providers: readonly IdentityProvider[], audiences: boolean): { provider: IdentityProvider; claims: Record<string, unknown> } {
  const parts = token.split(".");
  let header: unknown;
  let claims: unknown;
  try {
    if (parts.length !== 3) throw new Error("not three parts");
    header = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromBase64url(parts[0] as string) ?? new Uint8Array()));
    claims = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(fromBase64url(parts[1] as string) ?? new Uint8Array()));
  } catch {
    throw new EvidenceRejected("evidence_invalid", "the token is not a JWT");
  }
  if (!isObject(header) || !isObject(claims)) throw new EvidenceRejected("evidence_invalid", "the token is not a JWT");
  const provider = providers.find((p) => p.issuer === claims["iss"]);
  if (provider === undefined) throw new EvidenceRejected("evidence_invalid", `the token's issuer ${JSON.stringify(claims["iss"])} is not in the trust file`);
  const kid = typeof header["kid"] === "string" ? header["kid"] : null;
  const candidates = provider.keys.filter((k) => kid === null || k.kid === kid);
  if (candidates.length === 0) throw new EvidenceRejected("evidence_invalid", `no key ${JSON.stringify(kid)} of ${provider.issuer} is in the trust file`);
  const signature = fromBase64url(parts[2] as string);
  const input = utf8(`${parts[0]}.${parts[1]}`);
  if (signature === null || !candidates.some((key) => header["alg"] === key.alg && signed(key, input, signature))) {
    throw new EvidenceRejected("evidence_invalid", "the token's signature does not verify with the provider's keys");
  }
  if (typeof claims["sub"] !== "string") throw new EvidenceRejected("evidence_invalid", "the token does not verify: it names no sub");
  const named = Array.isArray(claims["aud"]) ? claims["aud"] : [claims["aud"]];
  if (audiences && provider.audiences.length > 0 && !named.some((a) => provider.audiences.includes(a as string))) {
    throw new EvidenceRejected("evidence_invalid", "the token does not verify: Audience doesn't match");
  }
  return { provider, claims };
}

function signed(key: ProviderKey, data: Uint8Array, signature: Uint8Array): boolean {
  try {
    switch (key.alg) {
      case "RS256":
        return verify("sha256", data, key.key, signature);
      case "PS256":
        return verify("sha256", data, { key: key.key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
      case "ES256":
        return verify("sha256", data, { key: key.key, dsaEncoding: "ieee-p1363" }, signature);
      case "ES384":
        return verify("sha384", data, { key: key.key, dsaEncoding: "ieee-p1363" }, signature);
      case "EdDSA":
        return verify(null, data, key.key, signature);
      default:
        return false;
    }
  } catch {
    return false;
  }
}
