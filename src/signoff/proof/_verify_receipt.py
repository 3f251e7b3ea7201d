"""Offline verification of one signed receipt and its inclusion proofs, under a trust root."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from signoff.exceptions import InvalidToken, NoTrustRoot, ProofFormatError
from signoff.proof._approvals import check_proposals
from signoff.proof._bundle import unb64
from signoff.proof._checkpoint import Checkpoint, open_checkpoint
from signoff.proof._events import event_from_dict, leaf_of, recomputed_hash
from signoff.proof._jws import PublicKeys, signed_kid, verify_jws
from signoff.proof._merkle import verify_inclusion
from signoff.proof._note import NoteRejected
from signoff.proof._receipt import RECEIPT_TYP, STATED, proven_executions, stated_claims
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

RECEIPT_FILE_FORMAT = "signoff-receipt/1"
NO_TRUST_ROOT = (
    "a receipt proves nothing with keys that travel with it — pass --trust FILE"
    " (`signoff keys export-trust`) or --jwks FILE, obtained from the deployment"
)


def receipt_file(signed_receipt: str, execution_id: str) -> dict[str, Any]:
    """What a person keeps: the file ``signoff audit verify --receipt`` reads."""
    return {
        "format": RECEIPT_FILE_FORMAT,
        "execution_id": execution_id,
        "signed_receipt": signed_receipt,
    }


def read_receipt_file(text: str) -> tuple[str, dict[str, Any] | None]:
    """A receipt file: the compact JWS alone, or ``{"signed_receipt": …, …}``.

    The second value is the file's other members (``checkpoint``: the receipt's
    checkpoint with cosignatures gathered after the receipt was signed; a
    ``jwks`` member is read but never trusted).
    """
    text = text.strip()
    if not text.startswith("{"):
        return text, None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProofFormatError(f"the receipt file is not JSON ({exc.msg})") from None
    if not isinstance(document, dict) or not isinstance(document.get("signed_receipt"), str):
        raise ProofFormatError("the receipt file has no 'signed_receipt'")
    return document["signed_receipt"], document


def verify_receipt(
    token: str,
    keys: TrustRoot | PublicKeys | None = None,
    *,
    held: Sequence[str] = (),
    expect: Expectation | None = None,
    require_evidence: str | None = None,
) -> Report:
    """Verify a signed receipt against a trust root obtained elsewhere.

    ``held`` are checkpoint notes the caller already holds: copies of the
    receipt's checkpoint add their cosignatures; one of the same size with
    another root is a fork; others cannot be compared without a bundle.
    ``require_evidence`` (``idp``, ``device``, ``any``) fails approvals vouched for by less.
    """
    if keys is None:
        raise NoTrustRoot(NO_TRUST_ROOT)
    trust = TrustRoot.of(keys)
    report = Report()
    try:
        claims = verify_jws(token, trust.keys, typ=RECEIPT_TYP)
    except InvalidToken as exc:
        report.fail("receipt_signature", exc.message)
        return report
    kid = str(signed_kid(token))
    at = claims.get("iat") if type(claims.get("iat")) is int else None
    refusal = trust.keys.window(kid).refusal(kid, "receipt", at)
    if at is None:
        report.fail("key_window", "the receipt has no integer 'iat' to check its key's window")
    elif refusal is not None:
        report.fail("key_window", refusal)
    evidence = claims.get("evidence")
    if not isinstance(evidence, dict):
        report.fail("receipt_mismatch", "the receipt carries no evidence")
        return report
    events = [event_from_dict(e) for e in evidence.get("events", [])]
    checkpoint = _checkpoint(evidence, trust, str(claims.get("tenant")), held, report)
    if checkpoint is not None:
        _check_inclusion(events, evidence.get("proofs", []), checkpoint, report)
        check_witnesses(checkpoint, trust, report)
        check_event_time(checkpoint, max((e.at for e in events), default=0), report)
        _check_held(checkpoint, trust, held, report)
    _check_replays(events, report)
    _check_tenant(events, str(claims.get("tenant")), report)
    _check_stated(claims, events, report)
    check_proposals(events, report, trust=trust)
    report.events = len(events)
    report.checkpoints = 0 if checkpoint is None else 1
    report.proven = proven_executions(events)
    annotate_proven(report)
    check_required(report, require_evidence)
    check_expected(expect, report)
    return report


def _checkpoint(
    evidence: dict[str, Any], trust: TrustRoot, tenant: str, held: Sequence[str], report: Report
) -> Checkpoint | None:
    note = with_cosignatures(str(evidence.get("checkpoint")), held)
    origin = note.split("\n", 1)[0]
    if not origin.endswith("/" + quote(tenant, safe="")):
        report.fail("checkpoint_signature", f"checkpoint of log {origin!r}, not tenant {tenant!r}")
        return None
    return open_trusted(note, trust, origin, report, "the receipt's checkpoint")


def _check_held(
    checkpoint: Checkpoint, trust: TrustRoot, held: Sequence[str], report: Report
) -> None:
    for index, note in enumerate(held):
        try:
            mine = open_checkpoint(note, trust.keys, origin=checkpoint.origin)
        except NoteRejected as exc:
            report.fail("checkpoint_signature", f"held checkpoint {index + 1}: {exc}")
            continue
        if mine.size == checkpoint.size and mine.root != checkpoint.root:
            report.fail("fork_detected", f"held checkpoint {index + 1} has another root")
        elif mine.size != checkpoint.size:
            report.fail(
                "checkpoint_unverifiable",
                f"held checkpoint {index + 1} ({mine.size}) is not the receipt's"
                f" ({checkpoint.size}): compare it with an exported bundle instead",
            )


def _check_inclusion(
    events: list[Any], proofs: Any, checkpoint: Checkpoint, report: Report
) -> None:
    if not isinstance(proofs, list) or len(proofs) != len(events):
        report.fail("not_included", "one inclusion proof per event is needed")
        return
    for event, proof in zip(events, proofs, strict=True):
        where = f"event #{event.seq} ({event.kind})"
        if recomputed_hash(event) != event.hash:
            report.fail("event_edited", f"{where}: content does not match its hash")
        path = [unb64(h) for h in proof]
        root = checkpoint.root
        if not verify_inclusion(event.seq - 1, checkpoint.size, leaf_of(event), path, root):
            report.fail("not_included", f"{where} is not in checkpoint {checkpoint.size}")
        else:
            report.covered += 1


def _check_replays(events: list[Any], report: Report) -> None:
    seen: dict[str, int] = {}
    for event in events:
        if event.mac is not None and event.mac in seen:
            report.fail("event_replayed", f"event #{event.seq} repeats event #{seen[event.mac]}")
        if event.mac is not None:
            seen.setdefault(event.mac, event.seq)


def _check_tenant(events: list[Any], tenant: str, report: Report) -> None:
    for event in events:
        if event.tenant != tenant:
            report.fail("wrong_tenant", f"event #{event.seq} is of tenant {event.tenant!r}")


def _check_stated(claims: dict[str, Any], events: list[Any], report: Report) -> None:
    expected = stated_claims(events)
    if not expected:
        report.fail("receipt_mismatch", "the evidence lacks the proposal or its outcome")
        return
    for name in STATED:
        if claims.get(name) != expected.get(name):
            report.fail("receipt_mismatch", f"the receipt's {name!r} differs from its events")
