/**
 * C2SP signed notes carrying a C2SP tlog-checkpoint, with c2sp.org/tlog-cosignature lines
 * (docs/PROOF-FORMAT.md §4). Written from the C2SP texts: npm has no maintained reader of
 * signed notes, and the format is a few lines of text and Ed25519.
 */
import { createPublicKey, verify, type KeyObject } from "node:crypto";

import { concat, fromBase64, sha256, toBase64url, utf8 } from "./bytes.js";

export const SIGNATURE_ED25519 = 0x01;
export const SIGNATURE_COSIGNATURE = 0x04;
const DASH = "\u2014 ";
/** signoff's own reader refuses more signature lines (golang.org/x/mod/sumdb/note: 100). */
export const MAX_SIGNATURES = 16;
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/;
const NAME = /^[^\s+]+$/u;

/** The note's own error: the reason a checkpoint does not open. */
export class NoteError extends Error {
  override name = "NoteError";
}

/** A key a signature line may be made with: a name, its 4-byte key ID, its Ed25519 public key. */
export interface NoteVerifier {
  name: string;
  type: typeof SIGNATURE_ED25519 | typeof SIGNATURE_COSIGNATURE;
  keyId: string; // hex of the 4 bytes
  key: KeyObject;
  /** What the caller knows the key as (a trusted kid, a witness's name). */
  owner: string;
}

/** `SHA-256(name || 0x0A || type || public key)[:4]`, as hex. */
export function keyId(name: string, type: number, publicKey: Uint8Array): string {
  return Buffer.from(sha256(utf8(name), new Uint8Array([0x0a, type]), publicKey).subarray(0, 4)).toString("hex");
}

export function ed25519Key(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: toBase64url(publicKey) }, format: "jwk" });
}

export function verifyEd25519(key: KeyObject, message: Uint8Array, signature: Uint8Array): boolean {
  try {
    return signature.length === 64 && verify(null, message, key, signature);
  } catch {
    return false;
  }
}

/** A signature line that verified. */
export interface NoteSignature {
  verifier: NoteVerifier;
  /** The cosignature's time (seconds), for `cosignature/v1` lines. */
  time: number | null;
}

export interface SignedNote {
  text: string;
  /** The signature lines, as written (to merge cosignatures gathered later). */
  lines: string[];
  verified: NoteSignature[];
}

/**
 * Split a note at its last blank line, check the form of every signature line, ignore the lines
 * of unknown (name, key ID), verify the others: one that does not verify rejects the note.
 */
export function openNote(note: string, verifiers: NoteVerifier[]): SignedNote {
  const cut = note.lastIndexOf("\n\n");
  if (cut < 0) throw new NoteError("no blank line before the signatures");
  const text = note.slice(0, cut + 1);
  const block = note.slice(cut + 2);
  if (CONTROL.test(text)) throw new NoteError("the note text holds a control character");
  if (!block.endsWith("\n")) throw new NoteError("the signatures do not end in a newline");
  const lines = block.slice(0, -1).split("\n");
  if (lines.length > MAX_SIGNATURES) throw new NoteError(`a note carries at most ${MAX_SIGNATURES} signatures`);
  const verified: NoteSignature[] = [];
  for (const line of lines) {
    if (!line.startsWith(DASH)) throw new NoteError("a signature line does not start with an em dash and a space");
    const rest = line.slice(DASH.length);
    const space = rest.indexOf(" ");
    const name = rest.slice(0, space);
    const blob = space > 0 ? fromBase64(rest.slice(space + 1)) : null;
    if (space <= 0 || !NAME.test(name) || blob === null || blob.length < 5) {
      throw new NoteError("a signature line is not `— <name> <base64>`");
    }
    const id = Buffer.from(blob.subarray(0, 4)).toString("hex");
    const known = verifiers.filter((v) => v.name === name && v.keyId === id);
    for (const verifier of known) {
      const signature = verifier.type === SIGNATURE_ED25519 ? checkPlain(verifier, text, blob) : checkCosignature(verifier, text, blob);
      if (signature === null) throw new NoteError(`the signature of ${name} (key ID ${id}) does not verify`);
      if (verifier.type === SIGNATURE_COSIGNATURE && verified.some((v) => v.verifier === verifier)) throw new NoteError(`${name} cosigned this note twice`);
      verified.push(signature);
    }
  }
  return { text, lines, verified };
}

function checkPlain(verifier: NoteVerifier, text: string, blob: Uint8Array): NoteSignature | null {
  return verifyEd25519(verifier.key, utf8(text), blob.subarray(4)) ? { verifier, time: null } : null;
}

function checkCosignature(verifier: NoteVerifier, text: string, blob: Uint8Array): NoteSignature | null {
  if (blob.length !== 4 + 8 + 64) return null;
  const time = Buffer.from(blob.subarray(4, 12)).readBigUInt64BE();
  if (time > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  const message = concat(utf8(`cosignature/v1\ntime ${time}\n`), utf8(text));
  return verifyEd25519(verifier.key, message, blob.subarray(12)) ? { verifier, time: Number(time) } : null;
}

/** The three body lines of a tlog-checkpoint: origin, size, root. */
export function checkpointBody(text: string): { origin: string; size: number; root: Uint8Array } {
  const lines = text.split("\n");
  if (lines.length !== 4 || lines[3] !== "") throw new NoteError("the checkpoint body is not exactly three lines");
  const [origin, sizeText, rootText] = lines as [string, string, string];
  if (origin === "") throw new NoteError("the checkpoint has no origin");
  if (!/^(0|[1-9][0-9]*)$/.test(sizeText) || !Number.isSafeInteger(Number(sizeText))) {
    throw new NoteError("the checkpoint's tree size is not a decimal without leading zeros");
  }
  const root = fromBase64(rootText);
  if (root === null || root.length !== 32) throw new NoteError("the checkpoint's root is not 32 bytes of base64");
  return { origin, size: Number(sizeText), root };
}

/** The checkpoint's origin (its first line), without opening it. */
export function noteOrigin(note: string): string {
  return note.slice(0, Math.max(note.indexOf("\n"), 0));
}

/** The note with the signature lines of `other` added, when both have the same text. */
export function mergeNotes(note: string, other: string): string | null {
  const a = note.lastIndexOf("\n\n");
  const b = other.lastIndexOf("\n\n");
  if (a < 0 || b < 0 || note.slice(0, a + 1) !== other.slice(0, b + 1)) return null;
  const lines = note.slice(a + 2).split("\n").filter((line) => line !== "");
  for (const line of other.slice(b + 2).split("\n")) if (line !== "" && !lines.includes(line)) lines.push(line);
  return `${note.slice(0, a + 1)}\n${lines.map((line) => `${line}\n`).join("")}`;
}
