/**
 * A device assertion in its stored form (docs/PROOF-FORMAT.md §9): a WebAuthn assertion whose
 * challenge binds the decision, re-verified with `node:crypto` (ECDSA P-256 with its DER
 * signature, Ed25519, RSASSA-PKCS1-v1_5; all SHA-256).
 */
import { constants, createPublicKey, verify, type KeyObject } from "node:crypto";

import { concat, equalBytes, fromBase64url, sha256, toBase64url, utf8 } from "./bytes.js";
import { jcs } from "./jcs.js";
import { paymentRefusal } from "./spc.js";

export interface DeviceAssertion {
  credential_id: string;
  public_key: Record<string, unknown>;
  authenticator_data: string;
  client_data_json: string;
  signature: string;
  nonce: string;
  version: number;
  rp_id: string;
  origin: string;
}

const FLAG_USER_PRESENT = 0x01;
const FLAG_USER_VERIFIED = 0x04;

/** The assertion, or why it is not one. */
export function parseDevice(value: unknown): DeviceAssertion | string {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "the device assertion is not an object";
  const d = value as Record<string, unknown>;
  for (const member of ["credential_id", "authenticator_data", "client_data_json", "signature", "nonce", "rp_id", "origin"]) {
    if (typeof d[member] !== "string") return `the device assertion has no ${member}`;
  }
  if (typeof d["version"] !== "number" || !Number.isSafeInteger(d["version"])) return "the device assertion has no integer version";
  if (typeof d["public_key"] !== "object" || d["public_key"] === null || Array.isArray(d["public_key"])) return "the device assertion has no public JWK";
  return d as unknown as DeviceAssertion;
}

/** The approver the challenge binds: the event's actor and tenant. */
export interface Approver {
  subject: string;
  tenant: string;
}

/** `SHA-256(JCS({args_digest, decision: "approve", nonce, proposal_id, subject, tenant, version}))`. */
export function deviceChallenge(proposalId: string, argsDigest: string, nonce: string, version: number, approver: Approver): Uint8Array {
  return sha256(utf8(jcs({ args_digest: argsDigest, decision: "approve", nonce, proposal_id: proposalId, subject: approver.subject, tenant: approver.tenant, version })));
}

/** Null when the assertion verifies for this proposal, digest and approver, else the reason it does not. */
export function deviceRefusal(device: DeviceAssertion, proposalId: string, argsDigest: string, approver: Approver, previewDigest: string | null = null): string | null {
  const challenge = deviceChallenge(proposalId, argsDigest, device.nonce, device.version, approver);
  const clientDataBytes = fromBase64url(device.client_data_json);
  const authenticatorData = fromBase64url(device.authenticator_data);
  const signature = fromBase64url(device.signature);
  if (clientDataBytes === null || authenticatorData === null || signature === null) return "a field is not base64url";
  let clientData: unknown;
  try {
    clientData = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(clientDataBytes));
  } catch {
    return "client_data_json is not JSON";
  }
  const c = (typeof clientData === "object" && clientData !== null ? clientData : {}) as Record<string, unknown>;
  if (c["type"] !== "webauthn.get" && c["type"] !== "payment.get") return `the client data's type is ${JSON.stringify(c["type"])}, not webauthn.get`;
  if (c["challenge"] !== toBase64url(challenge)) return "the assertion was made over another challenge (another proposal, digest, version, nonce or approver)";
  if (c["origin"] !== device.origin) return `the client data names the origin ${JSON.stringify(c["origin"])}, not ${JSON.stringify(device.origin)}`;
  if (c["type"] === "payment.get") {
    const shown = paymentRefusal(c, (device as unknown as Record<string, unknown>)["preview"], previewDigest);
    if (shown !== null) return shown;
  }
  if (authenticatorData.length < 37) return "the authenticator data is shorter than 37 bytes";
  if (!equalBytes(authenticatorData.subarray(0, 32), sha256(utf8(device.rp_id)))) return `the authenticator data is not for the RP ID ${device.rp_id}`;
  const flags = authenticatorData[32] as number;
  if ((flags & FLAG_USER_PRESENT) === 0 || (flags & FLAG_USER_VERIFIED) === 0) return "the authenticator did not verify the user (UP and UV flags)";
  const signed = concat(authenticatorData, sha256(clientDataBytes));
  const key = publicKey(device.public_key);
  if (key === null) return "the public key is not an EC P-256, Ed25519 or RSA JWK";
  try {
    const ok =
      key.kind === "ec"
        ? verify("sha256", signed, { key: key.key, dsaEncoding: "der" }, signature)
        : key.kind === "ed25519"
          ? verify(null, signed, key.key, signature)
          : verify("sha256", signed, { key: key.key, padding: constants.RSA_PKCS1_PADDING }, signature);
    return ok ? null : "the signature does not verify with the credential's public key";
  } catch {
    return "the signature does not verify with the credential's public key";
  }
}

function publicKey(jwk: Record<string, unknown>): { kind: "ec" | "ed25519" | "rsa"; key: KeyObject } | null {
  const kind = jwk["kty"] === "EC" && jwk["crv"] === "P-256" ? "ec" : jwk["kty"] === "OKP" && jwk["crv"] === "Ed25519" ? "ed25519" : jwk["kty"] === "RSA" ? "rsa" : null;
  if (kind === null || "d" in jwk) return null;
  const members = kind === "ec" ? ["kty", "crv", "x", "y"] : kind === "ed25519" ? ["kty", "crv", "x"] : ["kty", "n", "e"];
  const publicOnly = Object.fromEntries(members.map((m) => [m, jwk[m]]));
  try {
    return { kind, key: createPublicKey({ key: publicOnly as { kty: string }, format: "jwk" }) };
  } catch {
    return null;
  }
}
