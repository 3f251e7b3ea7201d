"""Checkpoints in the C2SP ``tlog-checkpoint`` format: origin, tree size, root hash.

Each tenant's audit log is one transparency log whose origin is
``<log name>/<tenant, percent-encoded>``; the signing key's note name is the
origin, as the spec recommends. No extension lines: the spec discourages
them, and everything a checkpoint must bind (the head event, its time, the
tenant) is already inside the tree. Successive checkpoints are linked by
RFC 9162 consistency proofs, not by a "previous" field.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from urllib.parse import quote

from cryptography.hazmat.primitives.asymmetric import ed25519

from signoff.proof._jws import PublicKeys
from signoff.proof._keys import SigningKey
from signoff.proof._merkle import HASH_SIZE
from signoff.proof._note import NoteRejected, open_note, sign_note


@dataclass(frozen=True, slots=True)
class Checkpoint:
    origin: str
    size: int
    root: bytes

    def body(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) < 4 or lines[-1] != "" or not all(lines[:-1]):
            raise NoteRejected("a checkpoint has origin, size and root hash lines")
        origin, size, root = lines[:3]
        if not size.isascii() or not size.isdigit() or (size != "0" and size.startswith("0")):
            raise NoteRejected(f"tree size {size!r} is not a plain decimal")
        try:
            digest = base64.b64decode(root, validate=True)
        except binascii.Error:
            raise NoteRejected("root hash is not base64") from None
        if len(digest) != HASH_SIZE:
            raise NoteRejected("root hash is not 32 bytes")
        return cls(origin, int(size), digest)


def origin_for(log_name: str, tenant: str) -> str:
    """A tenant's log origin; no space or '+' can appear (C2SP key-name rules)."""
    return f"{log_name}/{quote(tenant, safe='')}"


def sign_checkpoint(key: SigningKey, checkpoint: Checkpoint) -> str:
    private = key.private_key
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise NoteRejected("checkpoints are signed with an Ed25519 key")
    return sign_note(checkpoint.body(), checkpoint.origin, private)


def open_checkpoint(note: str, keys: PublicKeys, *, origin: str | None = None) -> Checkpoint:
    """Parse a checkpoint note signed by one of ``keys`` under its origin's name."""
    text = note.split("\n", 1)[0]
    claimed = origin if origin is not None else text
    checkpoint = Checkpoint.parse(open_note(note, ((claimed, k) for _, k in keys.ed25519())))
    if checkpoint.origin != claimed:
        raise NoteRejected(f"checkpoint of log {checkpoint.origin!r}, not {claimed!r}")
    return checkpoint
