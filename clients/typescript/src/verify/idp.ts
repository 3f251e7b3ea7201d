/**
 * Vouched consent (docs/PROOF-FORMAT.md §8, issue 22): an approval's `idp` token, signed by an
 * identity provider the trust file lists, whose one `signoff_proposal` authorization_details
 * entry names this proposal; verified with `node:crypto` (RS256, PS256, ES256, EdDSA).
 */
import { constants, createPublicKey, verify, type KeyObject } from "node:crypto";

import { fromBase64url, utf8 } from "./bytes.js";
import { ProofFormatError } from "./errors.js";
import type { FindingCode } from "./report.js";

export const AUTHORIZATION_TYPE = "signoff_proposal";
const BOUND = ["proposal_id", "tenant", "tool", "args_digest"] as const;
const SKEW_SECONDS = 300;
const DEFAULT_ALG: Record<string, string> = { RSA: "RS256", EC: "ES256", OKP: "EdDSA" };

export interface ProviderKey {
  kid: string | null;
  alg: string;
  key: KeyObject;
}

export interface IdentityProvider {
  issuer: string;
  keys: ProviderKey[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** One `identity_providers` entry of a trust file: `{issuer, jwks: {keys}}` (encryption keys skipped). */
export function parseProvider(entry: unknown): IdentityProvider {
  if (!isObject(entry) || typeof entry["issuer"] !== "string") throw new ProofFormatError("each identity provider is {issuer, jwks}");
  const jwks = entry["jwks"];
  if (!isObject(jwks) || !Array.isArray(jwks["keys"])) throw new ProofFormatError(`identity provider ${entry["issuer"]} has no jwks`);
  const keys: ProviderKey[] = [];
  for (const jwk of jwks["keys"]) {
    if (!isObject(jwk)) throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} is not an object`);
    if ((jwk["use"] ?? "sig") !== "sig") continue;
    const alg = typeof jwk["alg"] === "string" ? jwk["alg"] : DEFAULT_ALG[String(jwk["kty"])];
    let key: KeyObject;
    try {
      key = createPublicKey({ key: jwk as never, format: "jwk" });
    } catch {
      throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} does not load`);
    }
    if (alg === undefined) throw new ProofFormatError(`a key of identity provider ${entry["issuer"]} has no usable alg`);
    keys.push({ kid: typeof jwk["kid"] === "string" ? jwk["kid"] : null, alg, key });
  }
  return { issuer: entry["issuer"], keys };
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
  const claims = verifiedClaims(token, providers);
  if (claims["sub"] !== subject) throw new EvidenceRejected("evidence_mismatch", `the provider's token is for ${JSON.stringify(claims["sub"])}`);
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

function verifiedClaims(token: string, providers: readonly IdentityProvider[]): Record<string, unknown> {
  const parts = token.split(".");
  let header: unknown;
  let claims: unknown;
  try {
    if (parts.length !== 3) throw new Error("not three parts");
    header = JSON.parse(Buffer.from(fromBase64url(parts[0] as string) ?? new Uint8Array()).toString("utf8"));
    claims = JSON.parse(Buffer.from(fromBase64url(parts[1] as string) ?? new Uint8Array()).toString("utf8"));
  } catch {
    throw new EvidenceRejected("evidence_invalid", "the idp token is not a JWT");
  }
  if (!isObject(header) || !isObject(claims)) throw new EvidenceRejected("evidence_invalid", "the idp token is not a JWT");
  const provider = providers.find((p) => p.issuer === claims["iss"]);
  if (provider === undefined) throw new EvidenceRejected("evidence_invalid", `issuer ${JSON.stringify(claims["iss"])} is not an identity provider the trust file lists`);
  const kid = typeof header["kid"] === "string" ? header["kid"] : null;
  const key = kid === null ? (provider.keys.length === 1 ? provider.keys[0] : undefined) : provider.keys.find((k) => k.kid === kid);
  if (key === undefined) throw new EvidenceRejected("evidence_invalid", `no key of ${provider.issuer} for this token's kid`);
  const signature = fromBase64url(parts[2] as string);
  if (header["alg"] !== key.alg || signature === null || !signed(key, utf8(`${parts[0]}.${parts[1]}`), signature)) {
    throw new EvidenceRejected("evidence_invalid", "the idp token does not verify");
  }
  return claims;
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
      case "EdDSA":
        return verify(null, data, key.key, signature);
      default:
        return false;
    }
  } catch {
    return false;
  }
}
