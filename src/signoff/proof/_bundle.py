"""The audit bundle: one tenant's events, its signed checkpoints, proofs and public keys.

    {"format": "signoff-audit-bundle/1", "tenant": …, "origin": …,
     "start": {"size": m, "frontier": [...], "anchor": {"hash": …, "proof": [...]}},
     "events": [...], "checkpoints": ["<signed note>", …],
     "consistency": [{"old_size": …, "new_size": …, "proof": [...]}], "jwks": {...}}

A bundle from the beginning has ``start.size == 0``. One exported ``--since``
a checkpoint of size ``m`` carries the tree's frontier at ``m`` (its perfect
subtrees, which must fold to that checkpoint's root) and event ``m``'s hash
with an inclusion proof, so event ``m + 1`` links to something signed.
Hashes in proofs are base64, as in checkpoints.
"""

from __future__ import annotations

import base64
import binascii
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.exceptions import ProofFormatError
from signoff.proof._checkpoint import Checkpoint
from signoff.proof._events import event_from_dict, event_to_dict, leaf_of
from signoff.proof._merkle import CompactTree, LeafTree, inclusion_proof

BUNDLE_FORMAT = "signoff-audit-bundle/1"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def unb64(text: Any) -> bytes:
    try:
        return base64.b64decode(str(text), validate=True)
    except binascii.Error:
        raise ProofFormatError("a proof hash is not base64") from None


@dataclass(frozen=True, slots=True)
class Bundle:
    tenant: str
    origin: str
    start_size: int
    frontier: tuple[bytes, ...]
    anchor_hash: str | None
    anchor_proof: tuple[bytes, ...]
    events: tuple[AuditEvent, ...]
    checkpoints: tuple[str, ...]
    consistency: tuple[tuple[int, int, tuple[bytes, ...]], ...]
    jwks: dict[str, Any]


def parse_bundle(document: Any) -> Bundle:
    if not isinstance(document, dict) or document.get("format") != BUNDLE_FORMAT:
        raise ProofFormatError(f"not a {BUNDLE_FORMAT} document")
    try:
        start = document.get("start") or {"size": 0}
        anchor = start.get("anchor") or {}
        return Bundle(
            tenant=str(document["tenant"]),
            origin=str(document["origin"]),
            start_size=int(start["size"]),
            frontier=tuple(unb64(h) for h in start.get("frontier", [])),
            anchor_hash=anchor.get("hash"),
            anchor_proof=tuple(unb64(h) for h in anchor.get("proof", [])),
            events=tuple(event_from_dict(e) for e in document["events"]),
            checkpoints=tuple(str(note) for note in document["checkpoints"]),
            consistency=tuple(
                (int(c["old_size"]), int(c["new_size"]), tuple(unb64(h) for h in c["proof"]))
                for c in document.get("consistency", [])
            ),
            jwks=dict(document["jwks"]),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ProofFormatError(f"the bundle is missing or mistypes a field ({exc})") from None


def build_bundle(
    *,
    tenant: str,
    origin: str,
    events: Sequence[AuditEvent],
    checkpoints: Sequence[tuple[int, str]],
    jwks: Mapping[str, Any],
    since: int = 0,
) -> dict[str, Any]:
    """A bundle of ``events[since:]`` (all the tenant's events, in order) and its proofs.

    ``checkpoints`` are ``(tree size, signed note)`` in ascending size; those
    below ``since`` are left out, the one at ``since`` is kept as the anchor.
    A checkpoint larger than the log is kept too: the verifier must see it
    (``events_missing``), never a shorter log that looks complete.
    """
    leaves = [leaf_of(event) for event in events]
    kept = [(size, note) for size, note in checkpoints if size >= since]
    provable = [(size, note) for size, note in kept if size <= len(leaves)]
    start: dict[str, Any] = {"size": since}
    if since:
        tree = CompactTree()
        for leaf in leaves[:since]:
            tree.append(leaf)
        start["frontier"] = [b64(h) for h in tree.frontier()]
        proof = inclusion_proof(since - 1, leaves[:since])
        start["anchor"] = {"hash": events[since - 1].hash, "proof": [b64(h) for h in proof]}
    proofs = LeafTree(leaves)  # each subtree hashed once for all the checkpoints' proofs
    links = [
        {"old_size": a, "new_size": b, "proof": [b64(h) for h in proofs.consistency_proof(a, b)]}
        for (a, _), (b, _) in itertools.pairwise(provable)
        if a > 0
    ]
    return {
        "format": BUNDLE_FORMAT,
        "tenant": tenant,
        "origin": origin,
        "start": start,
        "events": [event_to_dict(event) for event in events[since:]],
        "checkpoints": [note for _, note in kept],
        "consistency": links,
        "jwks": dict(jwks),
    }


def checkpoint_sizes(checkpoints: Sequence[Checkpoint]) -> dict[int, Checkpoint]:
    return {checkpoint.size: checkpoint for checkpoint in checkpoints}
