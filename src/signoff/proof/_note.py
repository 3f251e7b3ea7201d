"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 and cosignature/v1 signatures.

A note is UTF-8 text ending in a newline, a blank line, then one line per
signature: ``— <key name> base64(key ID || signature)``. The key ID is the
first four bytes of ``SHA-256(key name || 0x0A || type || public key)``, type
``0x01`` for a plain Ed25519 signature over the text and ``0x04`` for a
timestamped c2sp.org/tlog-cosignature (``cosignature/v1``): the signature is
over ``"cosignature/v1\\ntime <T>\\n" || text`` and the line carries the 8-byte
big-endian ``T`` before it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ed25519

ED25519_TYPE = b"\x01"
COSIGNATURE_TYPE = b"\x04"
COSIGNATURE_LABEL = b"cosignature/v1"
EM_DASH = "\u2014"
MAX_SIGNATURES = 16


class NoteRejected(Exception):
    """The note is malformed, or no trusted signature verifies."""


@dataclass(frozen=True, slots=True)
class NoteSignature:
    name: str
    key_id: bytes
    signature: bytes


@dataclass(frozen=True, slots=True)
class Cosigner:
    """A key that makes timestamped ``cosignature/v1`` signatures (a witness, or the log)."""

    name: str
    public_key: ed25519.Ed25519PublicKey

    @property
    def key_id(self) -> bytes:
        return key_id_of(self.name, COSIGNATURE_TYPE, self.public_key.public_bytes_raw())

    def vkey(self) -> str:
        """The verifier key: ``<name>+<hex key ID>+base64(0x04 || public key)``."""
        raw = COSIGNATURE_TYPE + self.public_key.public_bytes_raw()
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(raw).decode()}"


def key_id_of(name: str, kind: bytes, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + kind + public_key).digest()[:4]


def note_key_id(name: str, public_key: bytes) -> bytes:
    return key_id_of(name, ED25519_TYPE, public_key)


def note_vkey(name: str, public_key: bytes) -> str:
    """The signed-note verifier key of a plain Ed25519 signer (a log): type 0x01."""
    key_id = note_key_id(name, public_key)
    return f"{name}+{key_id.hex()}+{base64.b64encode(ED25519_TYPE + public_key).decode()}"


def parse_vkey(text: str) -> Cosigner:
    """A ``cosignature/v1`` verifier key ``<name>+<hex key ID>+base64(0x04 || key)``."""
    name, _, rest = text.strip().partition("+")
    hex_id, _, encoded = rest.partition("+")
    try:
        raw = base64.b64decode(encoded, validate=True)
        key_id = bytes.fromhex(hex_id)
    except (binascii.Error, ValueError):
        raise NoteRejected(f"vkey {text!r} is not name+keyid+base64") from None
    if len(raw) != 33 or raw[:1] != COSIGNATURE_TYPE:
        raise NoteRejected(f"vkey {text!r} is not an Ed25519 cosignature/v1 key (type 0x04)")
    _check_name(name)
    cosigner = Cosigner(name, ed25519.Ed25519PublicKey.from_public_bytes(raw[1:]))
    if cosigner.key_id != key_id:
        raise NoteRejected(f"vkey {text!r}: the key ID does not match the key")
    return cosigner


def _check_name(name: str) -> None:
    if not name or "+" in name or any(ch.isspace() for ch in name):
        raise NoteRejected(f"key name {name!r} is empty or holds a space or '+'")


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise NoteRejected("note text must end with a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise NoteRejected("note text holds a control character")


def signature_line(name: str, key_id: bytes, signature: bytes) -> str:
    return f"{EM_DASH} {name} {base64.b64encode(key_id + signature).decode()}\n"


def sign_note(text: str, name: str, key: ed25519.Ed25519PrivateKey) -> str:
    _check_text(text)
    _check_name(name)
    key_id = note_key_id(name, key.public_key().public_bytes_raw())
    return f"{text}\n{signature_line(name, key_id, key.sign(text.encode()))}"


def cosignature_message(text: str, timestamp: int) -> bytes:
    return COSIGNATURE_LABEL + f"\ntime {timestamp}\n".encode() + text.encode()


def cosign(text: str, name: str, key: ed25519.Ed25519PrivateKey, timestamp: int) -> str:
    """One ``cosignature/v1`` signature line over ``text`` at ``timestamp`` (seconds)."""
    _check_text(text)
    _check_name(name)
    signature = key.sign(cosignature_message(text, timestamp))
    key_id = key_id_of(name, COSIGNATURE_TYPE, key.public_key().public_bytes_raw())
    return signature_line(name, key_id, timestamp.to_bytes(8, "big") + signature)


def parse_note(note: str) -> tuple[str, list[NoteSignature]]:
    """Split a note into its text and signature lines (nothing verified yet)."""
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise NoteRejected("no blank line between text and signatures")
    text, block = note[: cut + 1], note[cut + 2 :]
    _check_text(text)
    signatures = [parse_signature_line(line) for line in block.removesuffix("\n").split("\n")]
    if not signatures or len(signatures) > MAX_SIGNATURES:
        raise NoteRejected(f"a note carries 1 to {MAX_SIGNATURES} signatures")
    return text, signatures


def parse_signature_line(line: str) -> NoteSignature:
    prefix, _, rest = line.partition(" ")
    name, _, encoded = rest.partition(" ")
    if prefix != EM_DASH or not encoded or " " in encoded:
        raise NoteRejected(f"malformed signature line {line!r}")
    _check_name(name)
    try:
        raw = base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise NoteRejected(f"signature of {name!r} is not base64") from None
    if len(raw) < 5:
        raise NoteRejected(f"signature of {name!r} is too short")
    return NoteSignature(name, raw[:4], raw[4:])


def open_note(note: str, trusted: Iterable[tuple[str, ed25519.Ed25519PublicKey]]) -> str:
    """The note's text if a trusted key signed it; a failing trusted signature rejects all.

    ``trusted`` pairs a key name with its public key. Signatures from other
    keys are ignored, as the spec requires (witness cosignatures, rotation).
    """
    text, _ = open_note_by(note, trusted)
    return text


def open_note_by(
    note: str, trusted: Iterable[tuple[str, ed25519.Ed25519PublicKey]]
) -> tuple[str, list[ed25519.Ed25519PublicKey]]:
    """The note's text and which of the trusted keys signed it (at least one)."""
    text, signatures = parse_note(note)
    known = {(name, note_key_id(name, key.public_bytes_raw())): key for name, key in trusted}
    signers: list[ed25519.Ed25519PublicKey] = []
    for sig in signatures:
        key = known.get((sig.name, sig.key_id))
        if key is None:
            continue
        try:
            key.verify(sig.signature, text.encode())
        except InvalidSignature:
            raise NoteRejected(f"the signature of {sig.name!r} does not verify") from None
        signers.append(key)
    if not signers:
        raise NoteRejected("no signature from a trusted key")
    return text, signers


def cosignature_times(note: str, cosigners: Iterable[Cosigner]) -> dict[str, int]:
    """Cosigner name → the time of its verified ``cosignature/v1`` line on this note.

    Lines of unknown keys are ignored; a line of a known key that does not
    verify rejects the note (as a bad log signature would).
    """
    text, signatures = parse_note(note)
    known = {(c.name, c.key_id): c for c in cosigners}
    times: dict[str, int] = {}
    for sig in signatures:
        cosigner = known.get((sig.name, sig.key_id))
        if cosigner is None:
            continue
        if len(sig.signature) != 72:
            raise NoteRejected(f"the cosignature of {sig.name!r} is not timestamp || signature")
        timestamp = int.from_bytes(sig.signature[:8], "big")
        try:
            cosigner.public_key.verify(sig.signature[8:], cosignature_message(text, timestamp))
        except InvalidSignature:
            raise NoteRejected(f"the cosignature of {sig.name!r} does not verify") from None
        if sig.name in times:
            raise NoteRejected(f"{sig.name!r} cosigned this note twice")
        times[sig.name] = timestamp
    return times


def merge_signatures(note: str, lines: Iterable[str]) -> str:
    """``note`` with signature ``lines`` added (each once, in order), text untouched."""
    text, _ = parse_note(note)
    block = note[len(text) + 1 :]
    present = set(block.splitlines())
    added = [line.rstrip("\n") for line in lines]
    new = [line for line in dict.fromkeys(added) if line and line not in present]
    for line in new:
        parse_signature_line(line)
    return note + "".join(f"{line}\n" for line in new)
