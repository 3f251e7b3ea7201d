/**
 * The decision's Idempotency-Key, byte for byte the Java and Python clients' key:
 *
 *     key      = "confirm:v1:" + lowercase hex( SHA-256( field(proposal_id) || field(decimal(version)) ) )
 *     field(s) = 4-byte big-endian byte length of UTF-8(s) || UTF-8(s)
 *
 * Length prefixes, not a separator, so ("p1", 23) and ("p12", 3), or ids holding ":", never
 * share a key. One person's decision on one version always gets the same key, whatever process
 * sends it, so a retry (even after a restart) is answered with the first decision
 * (`duplicate: true`) instead of deciding twice. SHA-256 is WebCrypto's (`crypto.subtle`), in
 * Node >= 20, Deno, Bun, edge runtimes and browsers alike, hence the Promise.
 */
export const CONFIRMATION_KEY_PREFIX = "confirm:v1:";

/** The largest version the API accepts (2^31). */
const MAX_VERSION = 2 ** 31;

/** The message that is hashed, exposed so tests can compare it with the shared vectors. */
export function confirmationKeyMessage(proposalId: string, version: number): Uint8Array {
  if (typeof proposalId !== "string" || proposalId.length === 0) {
    throw new TypeError("a proposal id is required");
  }
  if (!Number.isSafeInteger(version) || version < 1 || version > MAX_VERSION) {
    throw new RangeError(`a version is an integer from 1 to ${MAX_VERSION}, not ${String(version)}`);
  }
  const fields = [proposalId, String(version)].map((field) => new TextEncoder().encode(field));
  const message = new Uint8Array(fields.reduce((size, field) => size + 4 + field.length, 0));
  const view = new DataView(message.buffer);
  let offset = 0;
  for (const field of fields) {
    view.setUint32(offset, field.length, false);
    message.set(field, offset + 4);
    offset += 4 + field.length;
  }
  return message;
}

/** `confirm:v1:` + hex SHA-256 of the length-prefixed proposal id and version. */
export async function confirmationIdempotencyKey(proposalId: string, version: number): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", confirmationKeyMessage(proposalId, version));
  return CONFIRMATION_KEY_PREFIX + hex(new Uint8Array(digest));
}

/** A fresh random key, for an execution that has no stable key of its own. */
export function randomIdempotencyKey(prefix = "ts"): string {
  return `${prefix}-${globalThis.crypto.randomUUID()}`;
}

export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
