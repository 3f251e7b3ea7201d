"""Offline verification of an audit bundle: no database, no server.

Order of checks: checkpoint signatures (trusted keys), consistency between
successive checkpoints, the start of the range, then one walk over the
events — hash recomputed, chain link, Merkle root compared at every
checkpoint size — and finally each proposal's approvals and executions, and each mandate's writes.
"""

from __future__ import annotations

from typing import Any

from signoff.audit._chain import GENESIS
from signoff.proof._approvals import check_proposals, passkeys_in
from signoff.proof._bundle import Bundle, parse_bundle
from signoff.proof._checkpoint import Checkpoint, open_checkpoint
from signoff.proof._events import leaf_of, recomputed_hash
from signoff.proof._jws import PublicKeys
from signoff.proof._mandates import check_mandates
from signoff.proof._merkle import CompactTree, leaf_hash, verify_consistency, verify_inclusion
from signoff.proof._note import NoteRejected
from signoff.proof._report import Report

SELF_KEYS_NOTE = (
    "keys taken from the bundle itself: pass --jwks with keys obtained elsewhere"
    " (the deployment's /.well-known/jwks.json) to rule out a swapped key"
)


def verify_bundle(document: Any, trusted: PublicKeys | None = None) -> Report:
    """Verify a parsed bundle document; ``trusted`` keys, else the bundle's own."""
    bundle = parse_bundle(document)
    report = Report(events=len(bundle.events))
    if trusted is None:
        trusted = PublicKeys(bundle.jwks)
        report.notes.append(SELF_KEYS_NOTE)
    checkpoints = _open_checkpoints(bundle, trusted, report)
    report.checkpoints = len(checkpoints)
    _check_consistency(bundle, checkpoints, report)
    tree, prev = _start(bundle, checkpoints, report)
    _walk(bundle, tree, prev, checkpoints, report)
    check_proposals(bundle.events, report, passkeys=passkeys_in(bundle.events))
    check_mandates(bundle.events, report)
    return report


def _open_checkpoints(bundle: Bundle, keys: PublicKeys, report: Report) -> dict[int, Checkpoint]:
    opened: dict[int, Checkpoint] = {}
    for index, note in enumerate(bundle.checkpoints):
        try:
            checkpoint = open_checkpoint(note, keys, origin=bundle.origin)
        except NoteRejected as exc:
            report.fail("checkpoint_signature", f"checkpoint {index + 1}: {exc}")
            continue
        if checkpoint.size in opened and opened[checkpoint.size].root != checkpoint.root:
            report.fail("checkpoint_inconsistent", f"two roots signed for size {checkpoint.size}")
        opened[checkpoint.size] = checkpoint
    return dict(sorted(opened.items()))


def _check_consistency(bundle: Bundle, checkpoints: dict[int, Checkpoint], report: Report) -> None:
    for old_size, new_size, proof in bundle.consistency:
        old, new = checkpoints.get(old_size), checkpoints.get(new_size)
        if old is None or new is None:
            report.fail("checkpoint_inconsistent", f"proof {old_size}→{new_size}: no checkpoint")
        elif not verify_consistency(old_size, new_size, old.root, new.root, proof):
            report.fail(
                "checkpoint_inconsistent",
                f"checkpoint {new_size} does not extend checkpoint {old_size}",
            )


def _start(
    bundle: Bundle, checkpoints: dict[int, Checkpoint], report: Report
) -> tuple[CompactTree, str]:
    size = bundle.start_size
    if size == 0:
        return CompactTree(), GENESIS
    try:
        tree = CompactTree(bundle.frontier, size)
    except ValueError:
        report.fail("start_mismatch", f"the frontier does not fit size {size}")
        return CompactTree(), str(bundle.anchor_hash)
    anchor = checkpoints.get(size)
    if anchor is None or tree.root() != anchor.root:
        report.fail("start_mismatch", f"the range does not start at a signed checkpoint ({size})")
    elif bundle.anchor_hash is None or not verify_inclusion(
        size - 1, size, _leaf(bundle.anchor_hash), bundle.anchor_proof, anchor.root
    ):
        report.fail("start_mismatch", f"event #{size} is not proven in checkpoint {size}")
    return tree, str(bundle.anchor_hash)


def _walk(
    bundle: Bundle,
    tree: CompactTree,
    prev: str,
    checkpoints: dict[int, Checkpoint],
    report: Report,
) -> None:
    for event in bundle.events:
        where = f"event #{event.seq} ({event.kind})"
        if event.tenant != bundle.tenant:
            report.fail("wrong_tenant", f"{where} belongs to tenant {event.tenant!r}")
        if event.seq != tree.size + 1 or event.prev_hash != prev:
            report.fail("chain_broken", f"{where}: gap or broken link before it")
        if recomputed_hash(event) != event.hash:
            report.fail("event_edited", f"{where}: content does not match its hash")
        tree.append(leaf_of(event))
        prev = event.hash
        signed = checkpoints.get(tree.size)
        if signed is not None and signed.root != tree.root():
            report.fail(
                "checkpoint_mismatch",
                f"checkpoint {tree.size} signed other events than these (history rewritten)",
            )
    last = max(checkpoints, default=0)
    if last > tree.size:
        report.fail(
            "events_missing",
            f"checkpoint {last} covers {last} events; the bundle ends at #{tree.size}",
        )
    report.covered = max(0, min(last, tree.size) - bundle.start_size)
    report.uncovered = max(0, tree.size - max(last, bundle.start_size))


def _leaf(hex_hash: str) -> bytes:
    try:
        return leaf_hash(bytes.fromhex(hex_hash))
    except ValueError:
        return b""
