/**
 * Vouched passkey enrolment (docs/PROOF-FORMAT.md §9.1): the identity provider's ID token in a
 * `passkey.registered` event's `evidence`, checked against the trust file's
 * `identity_providers` (idp.ts verifies the token).
 */
import { sha256, toBase64url, utf8 } from "./bytes.js";
import { eventData, type AuditEvent } from "./events.js";
import { jcs } from "./jcs.js";
import { EvidenceRejected, providerClaims } from "./idp.js";
import type { TrustRoot } from "./trust.js";

const SKEW_SECONDS = 300;
const FRESH_SIGN_IN_SECONDS = 600;

type Json = Record<string, unknown>;
const object = (value: unknown): Json | null => (typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : null);

/** `base64url(SHA-256(JCS({credential_id, public_key, purpose, subject, tenant})))`. */
export function enrolmentNonce(tenant: string, subject: string, credentialId: string, publicKey: unknown): string {
  return toBase64url(sha256(utf8(jcs({ credential_id: credentialId, public_key: publicKey, purpose: "signoff-passkey-enrolment", subject, tenant }))));
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
  let verified: ReturnType<typeof providerClaims>;
  try {
    verified = providerClaims(token, trust.identityProviders, true);
  } catch (error) {
    if (error instanceof EvidenceRejected) return error.message;
    throw error;
  }
  const { claims, provider } = verified;
  const at = Math.floor(registered.at / 1_000_000);
  const iat = claims["iat"];
  const exp = claims["exp"];
  if (typeof iat !== "number" || typeof exp !== "number") return "the identity token has no numeric iat and exp";
  if (!(iat - SKEW_SECONDS <= at && at <= exp + SKEW_SECONDS)) return "the log recorded the identity token outside its lifetime";
  if (claims[provider.subjectClaim] !== registered.actor) return `the identity token names another person than ${JSON.stringify(registered.actor)}`;
  if (provider.tenantClaim !== null && claims[provider.tenantClaim] !== registered.tenant) {
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
