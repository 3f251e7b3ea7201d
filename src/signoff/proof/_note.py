"""C2SP signed notes (c2sp.org/signed-note) with Ed25519 signatures.

A note is UTF-8 text ending in a newline, a blank line, then one line per
signature: ``— <key name> base64(key ID || signature)``. The key ID is the
first four bytes of ``SHA-256(key name || 0x0A || 0x01 || public key)``.
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
EM_DASH = "\u2014"
MAX_SIGNATURES = 16


class NoteRejected(Exception):
    """The note is malformed, or no trusted signature verifies."""


@dataclass(frozen=True, slots=True)
class NoteSignature:
    name: str
    key_id: bytes
    signature: bytes


def note_key_id(name: str, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + ED25519_TYPE + public_key).digest()[:4]


def _check_name(name: str) -> None:
    if not name or "+" in name or any(ch.isspace() for ch in name):
        raise NoteRejected(f"key name {name!r} is empty or holds a space or '+'")


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise NoteRejected("note text must end with a newline")
    if any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise NoteRejected("note text holds a control character")


def sign_note(text: str, name: str, key: ed25519.Ed25519PrivateKey) -> str:
    _check_text(text)
    _check_name(name)
    key_id = note_key_id(name, key.public_key().public_bytes_raw())
    signature = base64.b64encode(key_id + key.sign(text.encode())).decode()
    return f"{text}\n{EM_DASH} {name} {signature}\n"


def parse_note(note: str) -> tuple[str, list[NoteSignature]]:
    """Split a note into its text and signature lines (nothing verified yet)."""
    cut = note.rfind("\n\n")
    if cut < 0 or not note.endswith("\n"):
        raise NoteRejected("no blank line between text and signatures")
    text, block = note[: cut + 1], note[cut + 2 :]
    _check_text(text)
    signatures = [_signature(line) for line in block.removesuffix("\n").split("\n")]
    if not signatures or len(signatures) > MAX_SIGNATURES:
        raise NoteRejected(f"a note carries 1 to {MAX_SIGNATURES} signatures")
    return text, signatures


def _signature(line: str) -> NoteSignature:
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
    text, signatures = parse_note(note)
    known = {(name, note_key_id(name, key.public_bytes_raw())): key for name, key in trusted}
    verified = False
    for sig in signatures:
        key = known.get((sig.name, sig.key_id))
        if key is None:
            continue
        try:
            key.verify(sig.signature, text.encode())
        except InvalidSignature:
            raise NoteRejected(f"the signature of {sig.name!r} does not verify") from None
        verified = True
    if not verified:
        raise NoteRejected("no signature from a trusted key")
    return text
