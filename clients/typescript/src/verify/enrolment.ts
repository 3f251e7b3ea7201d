/**
 * Vouched passkey enrolment (docs/PROOF-FORMAT.md §9.1): the identity provider's ID token in a
 * `passkey.registered` event's `evidence`, checked against the trust file's
 * `identity_providers` with `node:crypto` (RS256, PS256, ES256, ES384, EdDSA).
 */
import { constants, createPublicKey, verify, type KeyObject } from "node:crypto";

import { fromBase64url, sha256, toBase64url, utf8 } from "./bytes.js";
import { eventData, type AuditEvent } from "./events.js";
import { jcs } from "./jcs.js";
import type { TrustRoot } from "./trust.js";

const SKEW_SECONDS = 120;
const FRESH_SIGN_IN_SECONDS = 600;

type Json = Record<string, unknown>;
const object = (value: unknown): Json | null => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null);

/** `base64url(SHA-256(JCS({credential_id, public_key, purpose, subject, tenant})))`. */
export function enrolmentNonce(tenant: string, subject: string, credentialId: string, publicKey: unknown): string {
  return toBase64url(sha256(utf8(jcs({ credential_id: credentialId, public_key: publicKey, purpose: "signoff-passkey-enrolment", subject, tenant }))));
}

function decodePart(part: string | undefined): Json | null {
  const bytes = part === undefined ? null : fromBase64url(part);
  if (bytes === null) return null;
  try {
    return object(JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)));
  } catch {
    return null;
  }
}

function signatureVerifies(alg: unknown, key: KeyObject, input: Uint8Array, signature: Uint8Array): boolean {
  try {
    if (alg === "RS256") return verify("sha256", input, { key, padding: constants.RSA_PKCS1_PADDING }, signature);
    if (alg === "PS256") return verify("sha256", input, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature);
    if (alg === "ES256") return verify("sha256", input, { key, dsaEncoding: "ieee-p1363" }, signature);
    if (alg === "ES384") return verify("sha384", input, { key, dsaEncoding: "ieee-p1363" }, signature);
    if (alg === "EdDSA") return verify(null, input, key, signature);
  } catch {
    return false;
  }
  return false;
}

/** The ID token's claims when a trusted provider signed it, else why not. */
function verifiedClaims(token: string, trust: TrustRoot): { claims: Json; provider: Json } | string {
  const [h, p, s] = token.split(".");
  const header = decodePart(h);
  const claims = decodePart(p);
  const signature = s === undefined ? null : fromBase64url(s);
  if (header === null || claims === null || signature === null) return "the identity token is not a JWT";
  const provider = trust.identityProviders.map(object).find((x) => x !== null && x["issuer"] === claims["iss"]);
  if (provider === undefined || provider === null) return `the identity token's issuer ${JSON.stringify(claims["iss"])} is not in the trust file`;
  const keys = (object(provider["jwks"])?.["keys"] ?? []) as unknown[];
  const input = utf8(`${h}.${p}`);
  const candidates = keys.map(object).filter((k): k is Json => k !== null && (header["kid"] === undefined || k["kid"] === header["kid"]));
  const ok = candidates.some((jwk) => {
    try {
      return signatureVerifies(header["alg"], createPublicKey({ key: jwk as never, format: "jwk" }), input, signature);
    } catch {
      return false;
    }
  });
  if (!ok) return "the identity token's signature does not verify with the provider's";
  const audiences = (provider["audiences"] ?? []) as unknown[];
  const aud = claims["aud"];
  const named = Array.isArray(aud) ? aud : [aud];
  if (audiences.length > 0 && !named.some((a) => audiences.includes(a))) return "the identity token does not verify: Audience doesn't match";
  return { claims, provider };
}

/** Why this `passkey.registered` event is not vouched for; null when it is. */
export function enrolmentRefusal(registered: AuditEvent, trust: TrustRoot): string | null {
  const data = eventData(registered);
  const evidence = object(data["evidence"]);
  if (evidence === null || evidence["kind"] !== "idp") return "the enrolment carries no identity provider's evidence";
  const token = evidence["id_token"];
  if (typeof token !== "string" || object(data["public_key"]) === null || registered.actor === null) {
    return "the enrolment's evidence has no ID token, or the event no key or person";
  }
  const verified = verifiedClaims(token, trust);
  if (typeof verified === "string") return verified;
  const { claims, provider } = verified;
  const at = Math.floor(registered.at / 1_000_000);
  const iat = claims["iat"];
  const exp = claims["exp"];
  if (typeof iat !== "number" || typeof exp !== "number") return "the identity token has no numeric iat and exp";
  if (!(iat - SKEW_SECONDS <= at && at <= exp + SKEW_SECONDS)) return "the log recorded the identity token outside its lifetime";
  const subjectClaim = typeof provider["subject_claim"] === "string" ? provider["subject_claim"] : "sub";
  if (claims[subjectClaim] !== registered.actor) return `the identity token names another person than ${JSON.stringify(registered.actor)}`;
  const tenantClaim = provider["tenant_claim"];
  if (typeof tenantClaim === "string" && tenantClaim !== "" && claims[tenantClaim] !== registered.tenant) {
    return `the identity token names another tenant than ${JSON.stringify(registered.tenant)}`;
  }
  if (claims["nonce"] !== enrolmentNonce(registered.tenant, registered.actor, String(data["credential_id"]), data["public_key"])) {
    return "the ID token was issued for another credential or person (nonce)";
  }
  const authTime = claims["auth_time"];
  if (typeof authTime !== "number" || !Number.isInteger(authTime) || !(-SKEW_SECONDS <= at - authTime && at - authTime <= FRESH_SIGN_IN_SECONDS)) {
    return "the ID token does not show a fresh sign-in just before the enrolment (auth_time)";
  }
  return null;
}
