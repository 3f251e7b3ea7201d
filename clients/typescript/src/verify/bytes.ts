/**
 * Byte helpers of the proof formats (docs/PROOF-FORMAT.md §1): strict decoders that refuse
 * anything but the one canonical encoding (Node's own decoders skip bad characters silently),
 * and SHA-256 through `node:crypto`.
 */
import { createHash } from "node:crypto";

const STD = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const URL = /^[A-Za-z0-9_-]*$/;
const HEX64 = /^[0-9a-f]{64}$/;

/** RFC 4648 standard base64 with padding (C2SP notes, Merkle hashes); null when not canonical. */
export function fromBase64(text: string): Uint8Array | null {
  if (!STD.test(text)) return null;
  const bytes = Buffer.from(text, "base64");
  return bytes.toString("base64") === text ? new Uint8Array(bytes) : null;
}

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64");
}

/** RFC 4648 base64url without padding (JWS, JWK, WebAuthn fields); null when not canonical. */
export function fromBase64url(text: string): Uint8Array | null {
  if (!URL.test(text) || text.length % 4 === 1) return null;
  const bytes = Buffer.from(text, "base64url");
  return bytes.toString("base64url") === text ? new Uint8Array(bytes) : null;
}

export function toBase64url(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("base64url");
}

/** 64 lowercase hex characters (an event hash, a digest). */
export function isHex64(value: unknown): value is string {
  return typeof value === "string" && HEX64.test(value);
}

export function fromHex(text: string): Uint8Array {
  return new Uint8Array(Buffer.from(text, "hex"));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString("hex");
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export function concat(...parts: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

export function sha256(...parts: Uint8Array[]): Uint8Array {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return new Uint8Array(hash.digest());
}

export function sha256Hex(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex");
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}
