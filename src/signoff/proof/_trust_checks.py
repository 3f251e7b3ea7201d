"""Checks both verifiers share: a checkpoint under the trust root, witnesses, expectations."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from signoff._canonical import args_digest
from signoff.exceptions import SignoffError
from signoff.proof._checkpoint import Checkpoint, open_checkpoint
from signoff.proof._note import NoteRejected, merge_signatures, parse_note
from signoff.proof._report import CLOCK_SKEW_SECONDS, Expectation, Report
from signoff.proof._trust import TrustRoot


def open_trusted(
    note: str, trust: TrustRoot, origin: str, report: Report, where: str
) -> Checkpoint | None:
    """The checkpoint if the trust root's keys signed it for ``origin``, inside their window."""
    if not trust.vouches_for(origin):
        report.fail("origin_untrusted", f"{where}: log {origin!r} is not one the trust root lists")
        return None
    try:
        return open_checkpoint(note, trust.keys, origin=origin, witnesses=trust.witnesses)
    except NoteRejected as exc:
        report.fail("checkpoint_signature", f"{where}: {exc}")
        return None


def check_witnesses(checkpoint: Checkpoint, trust: TrustRoot, report: Report) -> None:
    """The newest checkpoint needs ``witness_quorum`` cosignatures from the pinned witnesses."""
    report.cosigned_by = dict(checkpoint.cosigned)
    report.signed_at = checkpoint.time
    if len(checkpoint.cosigned) < trust.witness_quorum:
        have = ", ".join(sorted(checkpoint.cosigned)) or "none"
        report.fail(
            "cosignatures_missing",
            f"checkpoint {checkpoint.size} has {len(checkpoint.cosigned)} of the"
            f" {trust.witness_quorum} witness cosignatures required ({have})",
        )
    for name, at in checkpoint.cosigned.items():
        if checkpoint.time is not None and at + CLOCK_SKEW_SECONDS < checkpoint.time:
            report.fail("checkpoint_time", f"{name} cosigned at {at}, before the log signed it")


def check_event_time(checkpoint: Checkpoint, latest_event_at: int, report: Report) -> None:
    """No event a checkpoint covers is after that checkpoint's signed time."""
    if checkpoint.time is None:
        return
    if latest_event_at // 1_000_000 > checkpoint.time + CLOCK_SKEW_SECONDS:
        report.fail(
            "checkpoint_time",
            f"checkpoint {checkpoint.size} says it was signed at {checkpoint.time},"
            f" before the events it covers ({latest_event_at // 1_000_000})",
        )


def with_cosignatures(note: str, extra: Sequence[str]) -> str:
    """``note`` plus the signature lines of other copies of the same checkpoint."""
    try:
        text, _ = parse_note(note)
    except NoteRejected:
        return note  # reported when it is opened
    lines: list[str] = []
    for other in extra:
        try:
            other_text, _ = parse_note(other)
        except NoteRejected:
            continue
        if other_text == text:
            lines.extend(other[len(other_text) + 1 :].splitlines())
    return merge_signatures(note, lines) if lines else note


def check_expected(expect: Expectation | None, report: Report) -> None:
    """The proof proves what the reader expects: that proposal, that digest, those args."""
    if not expect:
        return
    assert expect is not None
    matches = [
        p for p in report.proven
        if expect.proposal_id in (None, p["proposal_id"])
        and expect.args_digest in (None, p["args_digest"])
    ]  # fmt: skip
    if expect.arguments is not None:
        matches = [p for p in matches if _digest_of(p, expect.arguments) == p["args_digest"]]
    if not matches:
        wanted = {
            "proposal": expect.proposal_id,
            "digest": expect.args_digest,
            "args": None if expect.arguments is None else "the given arguments",
        }
        named = ", ".join(f"{k} {v}" for k, v in wanted.items() if v is not None)
        report.fail("not_the_expected_proof", f"no execution proven here matches {named}")


def _digest_of(proven: dict[str, Any], arguments: Any) -> str | None:
    op = proven.get("op") or {}
    try:
        return args_digest(str(op.get("tool")), str(op.get("version")), arguments)
    except (SignoffError, TypeError, ValueError):
        return None
