"""Checkpoints in the C2SP ``tlog-checkpoint`` format: origin, tree size, root hash.

Each tenant's audit log is one transparency log whose origin is globally
unique (``<log name>/<tenant, percent-encoded>``, the log name defaulting to
the deployment's public URL); the signing key's note name is the origin, as
the spec recommends. The log signs each checkpoint twice with one Ed25519
key: a plain signed-note signature (type 0x01, what witnesses and
``golang.org/x/mod/sumdb/note`` read) and a timestamped c2sp.org/tlog-cosignature
``cosignature/v1`` line (type 0x04, as static CT logs add), which carries the
time the checkpoint was signed. No extension lines. Witnesses add their own
``cosignature/v1`` lines. Successive checkpoints are linked by RFC 9162
consistency proofs, not by a "previous" field.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from cryptography.hazmat.primitives.asymmetric import ed25519

from signoff.proof._jws import PublicKeys
from signoff.proof._keys import SigningKey
from signoff.proof._merkle import HASH_SIZE
from signoff.proof._note import (
    Cosigner,
    NoteRejected,
    cosign,
    cosignature_times,
    open_note_by,
    sign_note,
)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A checkpoint's body; once opened, also who signed it, when, and who cosigned."""

    origin: str
    size: int
    root: bytes
    time: int | None = field(default=None, compare=False)
    kid: str | None = field(default=None, compare=False)
    cosigned: Mapping[str, int] = field(default_factory=dict, compare=False)

    def body(self) -> str:
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        lines = text.split("\n")
        if len(lines) != 4 or lines[-1] != "" or not all(lines[:-1]):
            raise NoteRejected("a checkpoint has origin, size and root hash lines, no more")
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


def sign_checkpoint(key: SigningKey, checkpoint: Checkpoint, *, timestamp: int) -> str:
    """The signed note: the log's Ed25519 line and its timestamped cosignature/v1 line."""
    private = key.private_key
    if not isinstance(private, ed25519.Ed25519PrivateKey):
        raise NoteRejected("checkpoints are signed with an Ed25519 key")
    if not key.can_sign("checkpoint"):
        raise NoteRejected(f"key {key.kid} may not sign checkpoints (retired, or its purposes)")
    body = checkpoint.body()
    note = sign_note(body, checkpoint.origin, private)
    return note + cosign(body, checkpoint.origin, private, timestamp)


def open_checkpoint(
    note: str,
    keys: PublicKeys,
    *,
    origin: str | None = None,
    witnesses: Iterable[Cosigner] = (),
) -> Checkpoint:
    """Parse a checkpoint note signed by one of ``keys`` under its origin's name.

    Refused: no trusted signature, a failing one, a key whose purposes do not
    include checkpoints, a signed time outside the key's validity window (or
    none, from a retired key). The result carries the signed time and the
    verified witness cosignatures (name → time).
    """
    first = note.split("\n", 1)[0]
    claimed = origin if origin is not None else first
    text, signers = open_note_by(note, ((claimed, k) for _, k in keys.ed25519()))
    checkpoint = Checkpoint.parse(text)
    if checkpoint.origin != claimed:
        raise NoteRejected(f"checkpoint of log {checkpoint.origin!r}, not {claimed!r}")
    signer = signers[0]
    kid = keys.kid_of(signer)
    own = cosignature_times(note, [Cosigner(claimed, signer)])
    timestamp = own.get(claimed)
    refusal = keys.window(kid).refusal(kid, "checkpoint", timestamp)
    if refusal is not None:
        raise NoteRejected(refusal)
    cosigned = cosignature_times(note, witnesses)
    return dataclasses.replace(checkpoint, time=timestamp, kid=kid, cosigned=cosigned)
