"""Offline verification of an audit bundle: no database, no server, no trust in the bundle.

The trust root (keys with purposes and windows, log origins, witnesses) comes
from the caller, never from the bundle. Order of checks: checkpoint
signatures, windows and witnesses; consistency between successive
checkpoints; the start of the range; then one walk over the events — hash
recomputed, chain link, authenticator unique, Merkle root compared at every
checkpoint size and at the size of each checkpoint the caller already holds
— then coverage (events no checkpoint covers fail unless allowed), each
proposal's approvals and executions, each mandate's writes, and what the reader
expects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from signoff.audit._chain import GENESIS
from signoff.exceptions import NoTrustRoot
from signoff.proof._approvals import check_proposals
from signoff.proof._bundle import Bundle, parse_bundle
from signoff.proof._checkpoint import Checkpoint
from signoff.proof._events import leaf_of, recomputed_hash
from signoff.proof._jws import PublicKeys
from signoff.proof._mandates import check_mandates
from signoff.proof._merkle import CompactTree, leaf_hash, verify_consistency, verify_inclusion
from signoff.proof._receipt import proven_executions
from signoff.proof._report import Expectation, Report
from signoff.proof._required import annotate_proven, check_required
from signoff.proof._trust import TrustRoot
from signoff.proof._trust_checks import (
    check_event_time,
    check_expected,
    check_witnesses,
    open_trusted,
    with_cosignatures,
)

NO_TRUST_ROOT = (
    "a bundle proves nothing with the keys it carries itself — pass --trust FILE"
    " (`signoff keys export-trust`) or --jwks FILE, obtained from the deployment, not the bundle"
)


def verify_bundle(
    document: Any,
    trusted: TrustRoot | PublicKeys | None = None,
    *,
    held: Sequence[str] = (),
    allow_uncovered: bool = False,
    expect: Expectation | None = None,
    require_evidence: str | None = None,
) -> Report:
    """Verify a parsed bundle document against a trust root obtained elsewhere.

    Without one it raises :class:`NoTrustRoot`: the keys a bundle carries are never used.
    ``held`` are checkpoint notes the caller already had (from a witness, an
    earlier export, a receipt): the bundle must be consistent with each.
    ``require_evidence`` (``idp``, ``device``, ``any``) fails approvals vouched for by less.
    """
    if trusted is None:
        raise NoTrustRoot(NO_TRUST_ROOT)
    trust = TrustRoot.of(trusted)
    bundle = parse_bundle(document)
    report = Report(events=len(bundle.events))
    checkpoints = _open_checkpoints(bundle, trust, held, report)
    report.checkpoints = len(checkpoints)
    mine = _held(bundle, trust, held, report)
    _check_consistency(bundle, checkpoints, report)
    tree, prev = _start(bundle, checkpoints, report)
    _walk(bundle, tree, prev, checkpoints, mine, report)
    _coverage(bundle, checkpoints, trust, allow_uncovered, report)
    check_proposals(bundle.events, report, trust=trust)
    check_mandates(bundle.events, report, trust=trust)
    # Only what a trusted checkpoint covers is proven, --allow-uncovered or not.
    report.proven = proven_executions(bundle.events[: report.covered])
    annotate_proven(report)
    check_required(report, require_evidence)
    check_expected(expect, report)
    return report


def _open_checkpoints(
    bundle: Bundle, trust: TrustRoot, held: Sequence[str], report: Report
) -> dict[int, Checkpoint]:
    opened: dict[int, Checkpoint] = {}
    for index, note in enumerate(bundle.checkpoints):
        note = with_cosignatures(note, held)
        checkpoint = open_trusted(note, trust, bundle.origin, report, f"checkpoint {index + 1}")
        if checkpoint is None:
            continue
        if checkpoint.size in opened and opened[checkpoint.size].root != checkpoint.root:
            report.fail("checkpoint_inconsistent", f"two roots signed for size {checkpoint.size}")
        opened[checkpoint.size] = checkpoint
    return dict(sorted(opened.items()))


def _held(
    bundle: Bundle, trust: TrustRoot, held: Sequence[str], report: Report
) -> dict[int, Checkpoint]:
    """The caller's own checkpoints: each must fall inside what this bundle can prove."""
    mine: dict[int, Checkpoint] = {}
    for index, note in enumerate(held):
        where = f"held checkpoint {index + 1}"
        checkpoint = open_trusted(note, trust, bundle.origin, report, where)
        if checkpoint is None:
            continue
        if checkpoint.size < bundle.start_size:
            report.fail(
                "checkpoint_unverifiable",
                f"{where} ({checkpoint.size}) is before this bundle's start"
                f" ({bundle.start_size}): export from size {checkpoint.size} or earlier",
            )
            continue
        mine[checkpoint.size] = checkpoint
    return mine


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
    mine: dict[int, Checkpoint],
    report: Report,
) -> None:
    macs: dict[str, int] = {}
    latest_at = 0
    for event in bundle.events:
        where = f"event #{event.seq} ({event.kind})"
        if event.tenant != bundle.tenant:
            report.fail("wrong_tenant", f"{where} belongs to tenant {event.tenant!r}")
        if event.seq != tree.size + 1 or event.prev_hash != prev:
            report.fail("chain_broken", f"{where}: gap or broken link before it")
        if recomputed_hash(event) != event.hash:
            report.fail("event_edited", f"{where}: content does not match its hash")
        if event.mac is not None:
            if event.mac in macs:
                report.fail("event_replayed", f"{where} repeats event #{macs[event.mac]}")
            macs.setdefault(event.mac, event.seq)
        latest_at = max(latest_at, event.at)
        tree.append(leaf_of(event))
        prev = event.hash
        signed = checkpoints.get(tree.size)
        if signed is not None:
            if signed.root != tree.root():
                report.fail(
                    "checkpoint_mismatch",
                    f"checkpoint {tree.size} signed other events than these (history rewritten)",
                )
            check_event_time(signed, latest_at, report)
        held = mine.get(tree.size)
        if held is not None and held.root != tree.root():
            report.fail(
                "fork_detected",
                f"the checkpoint of size {tree.size} you hold has another root than this log:"
                " a fork, or history rewritten since",
            )
    for size in mine:
        if size > tree.size:
            report.fail(
                "events_missing",
                f"a checkpoint you hold covers {size} events; the bundle ends at #{tree.size}",
            )


def _coverage(
    bundle: Bundle,
    checkpoints: dict[int, Checkpoint],
    trust: TrustRoot,
    allow_uncovered: bool,
    report: Report,
) -> None:
    end = bundle.start_size + len(bundle.events)
    last = max(checkpoints, default=0)
    if last > end:
        report.fail(
            "events_missing", f"checkpoint {last} covers {last} events; the bundle ends at #{end}"
        )
    report.covered = max(0, min(last, end) - bundle.start_size)
    report.uncovered = max(0, end - max(last, bundle.start_size))
    if not checkpoints:
        report.fail("no_checkpoint", "no checkpoint signed by a trusted key: nothing is vouched")
        return
    check_witnesses(checkpoints[last], trust, report)
    if report.uncovered:
        first = max(last, bundle.start_size) + 1
        message = (
            f"{report.uncovered} events after checkpoint {last} (#{first}…#{end})"
            " are not covered by any signed checkpoint"
        )
        if allow_uncovered:
            report.notes.append(message + " (allowed by --allow-uncovered)")
        else:
            report.fail("events_uncovered", message)


def _leaf(hex_hash: str) -> bytes:
    try:
        return leaf_hash(bytes.fromhex(hex_hash))
    except ValueError:
        return b""
