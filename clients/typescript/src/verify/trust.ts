/**
 * The verifier's trust root (docs/PROOF-FORMAT.md §5): a `signoff-trust/1` file or a bare JWKS,
 * obtained from the deployment, never from what is verified.
 */
import { calculateJwkThumbprint, type JWK } from "jose";
import { createPublicKey, type KeyObject } from "node:crypto";

import { fromBase64, fromBase64url } from "./bytes.js";
import { ProofFormatError } from "./errors.js";
import { parseProvider, type IdentityProvider } from "./idp.js";
import { ed25519Key, keyId, SIGNATURE_COSIGNATURE, SIGNATURE_ED25519, type NoteVerifier } from "./note.js";

export type Purpose = "token" | "receipt" | "checkpoint";
const PURPOSES: readonly Purpose[] = ["token", "receipt", "checkpoint"];
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];

export interface TrustedKey {
  kid: string;
  alg: "EdDSA" | "ES256";
  /** The public JWK as the trust file holds it. */
  jwk: JWK;
  key: KeyObject;
  /** The raw Ed25519 public key (EdDSA keys only): what signs checkpoint notes. */
  ed25519: Uint8Array | null;
  purposes: ReadonlySet<Purpose>;
  notBefore: number | null;
  notAfter: number | null;
}

export interface TrustedWitness {
  name: string;
  vkey: string;
  keyId: string;
  publicKey: Uint8Array;
}

export interface TrustRoot {
  keys: TrustedKey[];
  /** The origins the deployment vouches for; empty: any origin its keys signed. */
  logs: string[];
  witnesses: TrustedWitness[];
  witnessQuorum: number;
  /** The identity providers whose signed tokens vouch for approvals (issue 22). */
  identityProviders: IdentityProvider[];
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const seconds = (value: unknown, what: string): number | null => {
  if (value === undefined || value === null) return null;
  if (typeof value !== "number" || !Number.isSafeInteger(value)) throw new ProofFormatError(`${what} is not an integer number of seconds`);
  return value;
};

const parsed = new WeakSet<TrustRoot>();

/** Read a trust file (`signoff keys export-trust`) or a JWKS; throws `ProofFormatError` (`proof_format`) for anything it cannot vouch for. */
export async function parseTrust(document: unknown): Promise<TrustRoot> {
  if (isObject(document) && parsed.has(document as unknown as TrustRoot)) return document as unknown as TrustRoot;
  if (!isObject(document)) throw new ProofFormatError("the trust root is not a JSON object");
  let root: TrustRoot;
  if (document["format"] === undefined && Array.isArray(document["keys"])) {
    root = await trustFile({ jwks: document });
  } else if (document["format"] === "signoff-trust/1") {
    root = await trustFile(document);
  } else {
    throw new ProofFormatError(`unknown trust file format ${JSON.stringify(document["format"])} (expected signoff-trust/1 or a JWKS)`);
  }
  if (root.keys.length === 0) throw new ProofFormatError("the trust root holds no key");
  parsed.add(root);
  return root;
}

async function trustFile(document: Record<string, unknown>): Promise<TrustRoot> {
  const jwks = document["jwks"];
  if (!isObject(jwks) || !Array.isArray(jwks["keys"])) throw new ProofFormatError("the trust file has no jwks.keys list");
  const keys: TrustedKey[] = [];
  for (const jwk of jwks["keys"]) keys.push(await trustedKey(jwk));
  if (new Set(keys.map((k) => k.kid)).size !== keys.length) throw new ProofFormatError("two keys share a kid");

  const logsValue = document["logs"] ?? [];
  if (!Array.isArray(logsValue)) throw new ProofFormatError("logs is not a list");
  const logs = logsValue.map((log) => {
    if (!isObject(log) || typeof log["origin"] !== "string" || log["origin"] === "") throw new ProofFormatError("a log has no origin");
    return log["origin"];
  });

  const witnessValue = document["witnesses"] ?? [];
  if (!Array.isArray(witnessValue)) throw new ProofFormatError("witnesses is not a list");
  const witnesses = witnessValue.map((w) => {
    if (!isObject(w) || typeof w["vkey"] !== "string") throw new ProofFormatError("a witness has no vkey");
    const witness = parseVkey(w["vkey"]);
    if (w["name"] !== undefined && w["name"] !== witness.name) throw new ProofFormatError(`the witness ${String(w["name"])} has the vkey of ${witness.name}`);
    return witness;
  });
  if (new Set(witnesses.map((w) => w.name)).size !== witnesses.length || new Set(witnesses.map((w) => Buffer.from(w.publicKey).toString("hex"))).size !== witnesses.length) {
    throw new ProofFormatError("each witness is listed once, with its own name and key");
  }
  const quorumValue = document["witness_quorum"] ?? witnesses.length;
  if (typeof quorumValue !== "number" || !Number.isSafeInteger(quorumValue) || quorumValue < 0 || quorumValue > witnesses.length) {
    throw new ProofFormatError(`witness_quorum must be an integer from 0 to the ${witnesses.length} witnesses listed`);
  }
  const providers = document["identity_providers"] ?? [];
  if (!Array.isArray(providers)) throw new ProofFormatError("identity_providers is not a list");
  const identityProviders = providers.map(parseProvider);
  if (new Set(identityProviders.map((p) => p.issuer)).size !== identityProviders.length) throw new ProofFormatError("each identity provider is listed once");
  return { keys, logs, witnesses, witnessQuorum: quorumValue, identityProviders };
}

async function trustedKey(value: unknown): Promise<TrustedKey> {
  if (!isObject(value)) throw new ProofFormatError("a key is not a JSON object");
  const jwk = value as JWK & Record<string, unknown>;
  const kid = jwk["kid"];
  if (typeof kid !== "string") throw new ProofFormatError("a key has no kid");
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw new ProofFormatError(`the key ${kid} holds private members: a trust root holds public keys only`);
  if (jwk["use"] !== undefined && jwk["use"] !== "sig") throw new ProofFormatError(`the key ${kid} is not a signing key (use ${String(jwk["use"])})`);
  let alg: "EdDSA" | "ES256";
  let ed25519: Uint8Array | null = null;
  if (jwk["kty"] === "OKP" && jwk["crv"] === "Ed25519") {
    alg = "EdDSA";
    ed25519 = typeof jwk["x"] === "string" ? fromBase64url(jwk["x"]) : null;
    if (ed25519 === null || ed25519.length !== 32) throw new ProofFormatError(`the key ${kid} has no 32-byte x`);
  } else if (jwk["kty"] === "EC" && jwk["crv"] === "P-256") {
    alg = "ES256";
    for (const member of ["x", "y"]) {
      const coordinate = typeof jwk[member] === "string" ? fromBase64url(jwk[member] as string) : null;
      if (coordinate === null || coordinate.length !== 32) throw new ProofFormatError(`the key ${kid} has no 32-byte ${member}`);
    }
  } else {
    throw new ProofFormatError(`the key ${kid} is neither Ed25519 (OKP) nor P-256 (EC)`);
  }
  if (jwk["alg"] !== alg) throw new ProofFormatError(`the key ${kid} names alg ${JSON.stringify(jwk["alg"])}; an ${jwk["kty"]} ${jwk["crv"]} key is ${alg}`);
  const thumbprint = await calculateJwkThumbprint(jwk, "sha256");
  if (thumbprint !== kid) throw new ProofFormatError(`the key ${kid} is not named by its RFC 7638 thumbprint (${thumbprint})`);
  const purposesValue: unknown = jwk["purposes"] ?? PURPOSES;
  if (!Array.isArray(purposesValue) || purposesValue.length === 0 || !purposesValue.every((p) => (PURPOSES as readonly unknown[]).includes(p))) {
    throw new ProofFormatError(`the key ${kid}'s purposes must be a non-empty list of ${PURPOSES.join(", ")}`);
  }
  // Checkpoint notes are Ed25519 only.
  const purposes = new Set(PURPOSES.filter((p) => purposesValue.includes(p) && (p !== "checkpoint" || alg === "EdDSA")));
  const notBefore = seconds(jwk["not_before"], `the key ${kid}'s not_before`);
  const notAfter = seconds(jwk["not_after"], `the key ${kid}'s not_after`);
  let key: KeyObject;
  try {
    key = createPublicKey({ key: { kty: jwk["kty"], crv: jwk["crv"], x: jwk["x"], ...(alg === "ES256" ? { y: jwk["y"] } : {}) } as JWK & { kty: string }, format: "jwk" });
  } catch {
    throw new ProofFormatError(`the key ${kid} is not a valid public key`);
  }
  return { kid, alg, jwk, key, ed25519, purposes, notBefore, notAfter };
}

/** `<name>+<hex key ID>+base64(0x04 || Ed25519 public key)`: a witness's cosignature key. */
export function parseVkey(vkey: string): TrustedWitness {
  // The name and key ID hold no "+"; the base64 key may: split at the first two only.
  const first = vkey.indexOf("+");
  const second = first < 0 ? -1 : vkey.indexOf("+", first + 1);
  const [name, id, blob] = second < 0 ? ["", "", ""] : [vkey.slice(0, first), vkey.slice(first + 1, second), vkey.slice(second + 1)];
  const raw = second < 0 ? null : fromBase64(blob);
  if (raw === null || name === "" || /\s/u.test(name) || !/^[0-9a-f]{8}$/.test(id) || raw.length !== 33) {
    throw new ProofFormatError(`${JSON.stringify(vkey)} is not a vkey (<name>+<key ID>+<base64 key>)`);
  }
  if (raw[0] !== SIGNATURE_COSIGNATURE) throw new ProofFormatError(`the vkey of ${name} is not a cosignature/v1 (type 0x04) key`);
  const publicKey = raw.subarray(1);
  if (keyId(name, SIGNATURE_COSIGNATURE, publicKey) !== id) throw new ProofFormatError(`the vkey of ${name} has a wrong key ID`);
  return { name, vkey, keyId: id, publicKey };
}

/** The keys a checkpoint of `origin` may carry lines of: the trusted checkpoint keys (both line types) and the witnesses. */
export function noteVerifiers(trust: TrustRoot, origin: string): NoteVerifier[] {
  const out: NoteVerifier[] = [];
  for (const key of trust.keys) {
    if (key.ed25519 === null || !key.purposes.has("checkpoint")) continue;
    const object = ed25519Key(key.ed25519);
    out.push({ name: origin, type: SIGNATURE_ED25519, keyId: keyId(origin, SIGNATURE_ED25519, key.ed25519), key: object, owner: key.kid });
    out.push({ name: origin, type: SIGNATURE_COSIGNATURE, keyId: keyId(origin, SIGNATURE_COSIGNATURE, key.ed25519), key: object, owner: key.kid });
  }
  for (const witness of trust.witnesses) {
    if (witness.name === origin) continue; // a witness is never the log
    out.push({ name: witness.name, type: SIGNATURE_COSIGNATURE, keyId: witness.keyId, key: ed25519Key(witness.publicKey), owner: witness.name });
  }
  return out;
}

/** `not_before ≤ time < not_after`; a key with a `not_after` needs a time. */
export function inWindow(key: TrustedKey, time: number | null): boolean {
  if (time === null) return key.notAfter === null;
  return (key.notBefore === null || key.notBefore <= time) && (key.notAfter === null || time < key.notAfter);
}

export { PURPOSES };
