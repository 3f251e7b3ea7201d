/** Opening a checkpoint under the trust root (docs/PROOF-FORMAT.md §4). */
import { checkpointBody, NoteError, openNote, SIGNATURE_COSIGNATURE, SIGNATURE_ED25519 } from "./note.js";
import { inWindow, noteVerifiers, type TrustRoot } from "./trust.js";

export interface Cosignature {
  name: string;
  /** When the witness cosigned (seconds). */
  time: number;
}

export interface Checkpoint {
  note: string;
  origin: string;
  size: number;
  root: Uint8Array;
  /** The time the log signed it (seconds; its own `cosignature/v1` line), or null. */
  time: number | null;
  /** The trusted key that signed it. */
  kid: string;
  /** Verified cosignatures of the trusted witnesses, one per witness. */
  cosignatures: Cosignature[];
}

/**
 * Open `note` as a checkpoint of `origin`: form, every known key's line verifies, a trusted
 * checkpoint key's `0x01` line under the origin whose window holds the signed time. Throws
 * `NoteError` (reported as `checkpoint_signature`).
 */
export function openCheckpoint(note: string, trust: TrustRoot, origin: string): Checkpoint {
  const signed = openNote(note, noteVerifiers(trust, origin));
  const body = checkpointBody(signed.text);
  if (body.origin !== origin) throw new NoteError(`the checkpoint is of ${JSON.stringify(body.origin)}, not ${JSON.stringify(origin)}`);
  const logLines = signed.verified.filter((s) => s.verifier.name === origin);
  let accepted: { kid: string; time: number | null } | null = null;
  let refusal = "no trusted checkpoint key signed it";
  for (const plain of logLines.filter((s) => s.verifier.type === SIGNATURE_ED25519)) {
    const kid = plain.verifier.owner;
    const key = trust.keys.find((k) => k.kid === kid);
    const stamped = logLines.find((s) => s.verifier.type === SIGNATURE_COSIGNATURE && s.verifier.owner === kid);
    const time = stamped?.time ?? null;
    if (key !== undefined && inWindow(key, time)) {
      accepted = { kid, time };
      break;
    }
    refusal = time === null ? `the key ${kid} was retired and the checkpoint carries no signed time` : `the key ${kid} was not valid at the signed time ${time}`;
  }
  if (accepted === null) throw new NoteError(refusal);
  const cosignatures: Cosignature[] = [];
  for (const s of signed.verified) {
    if (s.verifier.name !== origin && s.time !== null && !cosignatures.some((c) => c.name === s.verifier.name)) {
      cosignatures.push({ name: s.verifier.name, time: s.time });
    }
  }
  return { note, origin, size: body.size, root: body.root, time: accepted.time, kid: accepted.kid, cosignatures };
}

/** Seconds of clock skew the time check allows. */
export const SKEW_SECONDS = 300;

/** The witnesses that cosigned more than 300 s before the log signed (back-dated signatures). */
export function backdatedCosignatures(checkpoint: Checkpoint): Cosignature[] {
  const time = checkpoint.time;
  return time === null ? [] : checkpoint.cosignatures.filter((c) => c.time < time - SKEW_SECONDS);
}

/** How many distinct trusted witnesses cosigned, against the quorum. */
export function quorumMet(checkpoint: Checkpoint, trust: TrustRoot): boolean {
  return checkpoint.cosignatures.length >= trust.witnessQuorum;
}
