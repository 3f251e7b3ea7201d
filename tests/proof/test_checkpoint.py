"""Checkpoints are C2SP tlog-checkpoint signed notes, readable by an independent reader."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519

from signoff.proof import (
    Checkpoint,
    KeySet,
    PublicKeys,
    SigningKey,
    open_checkpoint,
    origin_for,
    sign_checkpoint,
)
from signoff.proof._merkle import root_hash
from signoff.proof._note import NoteRejected, sign_note

SIGNED_AT = 1_767_225_600


def sign(key: SigningKey, checkpoint: Checkpoint) -> str:
    return sign_checkpoint(key, checkpoint, timestamp=SIGNED_AT)


def independent_read(note: str, name: str, public_key: bytes) -> tuple[str, int, bytes]:
    """A signed-note + checkpoint reader written from the C2SP text, sharing no code.

    signed-note: text ending in U+000A, a blank line, then lines
    "U+2014 U+0020 <key name> U+0020 base64(4-byte key ID || signature)";
    key ID = SHA-256(key name || 0x0A || 0x01 || 32-byte Ed25519 key)[:4].
    tlog-checkpoint: origin, decimal tree size, base64 root hash.
    """
    assert note.endswith("\n")
    text, _, signatures = note.rpartition("\n\n")
    text += "\n"
    assert all(ord(c) >= 0x20 or c == "\n" for c in note)
    key_id = hashlib.sha256(name.encode() + b"\x0a\x01" + public_key).digest()[:4]
    verified = False
    for line in signatures.splitlines():
        assert line.startswith("\u2014 ")
        line_name, blob = line[2:].split(" ")
        raw = base64.b64decode(blob)
        if line_name == name and raw[:4] == key_id:
            ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(raw[4:], text.encode())
            verified = True
    assert verified
    origin, size, root, *extensions = text.split("\n")[:-1]
    assert not extensions and str(int(size)) == size
    return origin, int(size), base64.b64decode(root)


def test_checkpoint_is_read_by_an_independent_signed_note_reader() -> None:
    """Origin, size and root hash come back out of our note through the C2SP rules alone."""
    keyset = KeySet.generate()
    origin = origin_for("signoff.example", "acme corp+1")
    root = root_hash([hashlib.sha256(b"x").digest()])
    note = sign(keyset.note_key(), Checkpoint(origin, 1, root))
    assert note.startswith(f"{origin}\n1\n{base64.b64encode(root).decode()}\n\n\u2014 {origin} ")
    assert " " not in origin and "+" not in origin
    public = keyset.note_key().public_bytes_raw()
    assert independent_read(note, origin, public) == (origin, 1, root)


def test_open_checkpoint_with_the_jwks() -> None:
    """The Ed25519 keys of the published JWKS open checkpoints; another deployment's do not."""
    keyset = KeySet.generate()
    checkpoint = Checkpoint("signoff.example/acme", 7, bytes(32))
    note = sign(keyset.note_key(), checkpoint)
    assert open_checkpoint(note, PublicKeys(keyset.public_jwks())) == checkpoint
    with pytest.raises(NoteRejected, match="no signature from a trusted key"):
        open_checkpoint(note, PublicKeys(KeySet.generate().public_jwks()))


def test_unknown_cosignatures_are_ignored_and_a_bad_known_one_rejects() -> None:
    """A witness's extra signature line is ignored; a broken one from our key is not."""
    keyset = KeySet.generate()
    note = sign(keyset.note_key(), Checkpoint("signoff.example/acme", 3, bytes(32)))
    witness = sign_note("x\n", "witness.example", ed25519.Ed25519PrivateKey.generate())
    cosigned = note + witness.split("\n\n")[1]
    keys = PublicKeys(keyset.public_jwks())
    assert open_checkpoint(cosigned, keys).size == 3
    head, _, line = note.rstrip("\n").rpartition("\n")
    head, _, line = head.rpartition("\n")  # the plain Ed25519 line, before the timestamped one
    raw = bytearray(base64.b64decode(line.split(" ")[2]))
    raw[10] ^= 1
    broken = f"{head}\n{line.rsplit(' ', 1)[0]} {base64.b64encode(bytes(raw)).decode()}\n"
    broken += note.rstrip("\n").rpartition("\n")[2] + "\n"
    with pytest.raises(NoteRejected, match="does not verify"):
        open_checkpoint(broken, keys)


def test_es256_deployments_sign_checkpoints_with_their_ed25519_key() -> None:
    """The active ES256 key signs JWS; the newest Ed25519 key signs notes."""
    keyset = KeySet.generate().rotated("ES256", now=SIGNED_AT)
    assert keyset.active_key.alg == "ES256" and keyset.note_key().alg == "EdDSA"
    only_es = KeySet.generate("ES256")
    with pytest.raises(Exception, match="rotate --alg EdDSA"):
        only_es.note_key()


@pytest.mark.parametrize(
    "body", ["o\n01\nAAAA\n", "o\n1\n", "o\n1\n" + base64.b64encode(bytes(31)).decode() + "\n"]
)
def test_malformed_checkpoint_bodies_are_refused(body: str) -> None:
    """Leading zeros, missing lines and short roots are not checkpoints."""
    with pytest.raises(NoteRejected):
        Checkpoint.parse(body)


def test_a_checkpoint_with_extension_lines_is_refused() -> None:
    """signoff's format has no extension lines (PROOF-FORMAT.md): the three verifiers agree."""
    root = base64.b64encode(b"\0" * 32).decode()
    assert Checkpoint.parse(f"log/acme\n3\n{root}\n").size == 3
    with pytest.raises(NoteRejected):
        Checkpoint.parse(f"log/acme\n3\n{root}\nextension\n")
