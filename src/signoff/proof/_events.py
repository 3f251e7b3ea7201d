"""Audit events as they travel in bundles and receipts, and their Merkle leaves.

An event's leaf in its tenant's tree is ``leaf_hash(event hash bytes)``: the
tree commits to the same hashes the chain links, so a rewritten event needs
a new hash, which no longer matches a signed root.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.exceptions import ProofFormatError
from signoff.proof._merkle import leaf_hash

_TYPES: dict[str, tuple[type, ...]] = {
    "tenant": (str,),
    "seq": (int,),
    "at": (int,),
    "kind": (str,),
    "proposal_id": (str, type(None)),
    "execution_id": (str, type(None)),
    "actor": (str, type(None)),
    "data": (str,),
    "prev_hash": (str,),
    "hash": (str,),
}


_FIELDS = tuple(field.name for field in fields(AuditEvent) if field.name != "mac")


def event_to_dict(event: AuditEvent) -> dict[str, Any]:
    # The fields by name (dataclasses.asdict deep-copies each value: 5× slower on an export).
    document = {name: getattr(event, name) for name in _FIELDS}
    if event.mac is not None:  # an event from before authenticators is hashed without one
        document["mac"] = event.mac
    return document


def event_from_dict(document: Mapping[str, Any]) -> AuditEvent:
    if not isinstance(document, Mapping):
        raise ProofFormatError("an event is not a JSON object")
    for name, types in _TYPES.items():
        value = document.get(name)
        if not isinstance(value, types) or isinstance(value, bool):
            raise ProofFormatError(f"event field {name!r} is missing or of the wrong type")
    if not _is_hex32(document["hash"]) or not _is_hex32(document["prev_hash"]):
        raise ProofFormatError("event hashes are 64 lowercase hex digits")
    mac = document.get("mac")
    if mac is not None and not isinstance(mac, str):
        raise ProofFormatError("event field 'mac' is not a string")
    return AuditEvent(**{name: document[name] for name in _TYPES}, mac=mac)


def _is_hex32(text: str) -> bool:
    return _HEX32.fullmatch(text) is not None


_HEX32 = re.compile(r"[0-9a-f]{64}")  # 64 lowercase hex digits, nothing else (one C scan)


def recomputed_hash(event: AuditEvent) -> str:
    return event.recomputed_hash()


def leaf_of(event: AuditEvent) -> bytes:
    return leaf_hash(bytes.fromhex(event.hash))


def payload_of(event: AuditEvent) -> dict[str, Any]:
    try:
        data = json.loads(event.data)
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}
