"""The decision Idempotency-Key `confirm:v1:…`: the same bytes in Python and in the Java client."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import Any

import pytest

from signoff.client import confirmation_idempotency_key
from tests.conftest import APPROVER
from tests.http.conftest import Api, auth

VECTORS = (
    Path(__file__).resolve().parents[2]
    / "clients/java/src/test/resources/confirmation-key-vectors.json"
)


def vectors() -> list[dict[str, Any]]:
    return json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]  # type: ignore[no-any-return]


def hashed_message(proposal_id: str, version: int) -> bytes:
    """Written out by hand from docs/CLIENTS.md: u32 big-endian byte length, then UTF-8 bytes."""
    fields = [proposal_id.encode("utf-8"), str(version).encode("utf-8")]
    return b"".join(struct.pack(">I", len(field)) + field for field in fields)


@pytest.mark.parametrize("vector", vectors(), ids=lambda v: f"{v['proposal_id']}@{v['version']}")
def test_vector_is_the_documented_layout(vector: dict[str, Any]) -> None:
    """hashlib over the documented bytes gives the file's key, and so does the client."""
    message = hashed_message(vector["proposal_id"], vector["version"])
    assert message.hex() == vector["message_hex"]
    assert "confirm:v1:" + hashlib.sha256(message).hexdigest() == vector["key"]
    assert confirmation_idempotency_key(vector["proposal_id"], vector["version"]) == vector["key"]


def test_vectors_cover_the_collisions_a_separator_would_allow() -> None:
    """p1@23 and p12@3 concatenate alike; ids with ':' and non-ASCII ids are included."""
    found = {(v["proposal_id"], v["version"]): v["key"] for v in vectors()}
    assert found[("p1", 23)] != found[("p12", 3)]
    assert ("task-100:confirmation-100", 3) in found
    assert any(not pid.isascii() for pid, _ in found)
    assert len(set(found.values())) == len(found)


@pytest.mark.parametrize("version", [0, -1, True])
def test_a_version_below_one_is_refused(version: int) -> None:
    """The API's versions start at 1; a bool is not a version."""
    with pytest.raises(ValueError, match="version"):
        confirmation_idempotency_key("prop_1", version)


def test_the_server_answers_a_retried_derived_key_as_a_duplicate(api: Api) -> None:
    """The derived key is a valid Idempotency-Key; sent twice, the second answer is the first."""
    proposal = api.propose()
    key = confirmation_idempotency_key(proposal["proposal_id"], proposal["version"])
    first = api.decide(proposal, key=key)
    again = api.decide(proposal, key=key)
    assert (first.status_code, again.status_code) == (200, 200)
    assert (first.json()["duplicate"], again.json()["duplicate"]) == (False, True)
    assert again.json()["proposal"] == first.json()["proposal"]
    read = api.client.get(f"/v1/proposals/{proposal['proposal_id']}", headers=auth(APPROVER))
    assert len(read.json()["approvals"]) == 1
