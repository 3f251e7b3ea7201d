"""Offline verification of one signed receipt and its inclusion proofs."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from signoff.exceptions import InvalidToken, ProofFormatError
from signoff.proof._approvals import check_proposals, passkeys_in
from signoff.proof._bundle import unb64
from signoff.proof._checkpoint import Checkpoint, open_checkpoint
from signoff.proof._events import event_from_dict, leaf_of, recomputed_hash
from signoff.proof._jws import PublicKeys, verify_jws
from signoff.proof._merkle import verify_inclusion
from signoff.proof._note import NoteRejected
from signoff.proof._receipt import RECEIPT_TYP, STATED, stated_claims
from signoff.proof._report import Report

RECEIPT_FILE_FORMAT = "signoff-receipt/1"


def read_receipt_file(text: str) -> tuple[str, dict[str, Any] | None]:
    """A receipt file: the compact JWS alone, or ``{"signed_receipt": …, "jwks": …}``."""
    text = text.strip()
    if not text.startswith("{"):
        return text, None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProofFormatError(f"the receipt file is not JSON ({exc.msg})") from None
    if not isinstance(document, dict) or not isinstance(document.get("signed_receipt"), str):
        raise ProofFormatError("the receipt file has no 'signed_receipt'")
    jwks = document.get("jwks")
    return document["signed_receipt"], jwks if isinstance(jwks, dict) else None


def verify_receipt(token: str, keys: PublicKeys) -> Report:
    report = Report()
    try:
        claims = verify_jws(token, keys, typ=RECEIPT_TYP)
    except InvalidToken as exc:
        report.fail("receipt_signature", exc.message)
        return report
    evidence = claims.get("evidence")
    if not isinstance(evidence, dict):
        report.fail("receipt_mismatch", "the receipt carries no evidence")
        return report
    checkpoint = _checkpoint(evidence, keys, str(claims.get("tenant")), report)
    events = [event_from_dict(e) for e in evidence.get("events", [])]
    proofs = evidence.get("proofs", [])
    if checkpoint is not None:
        _check_inclusion(events, proofs, checkpoint, report)
    _check_stated(claims, events, report)
    check_proposals(events, report, passkeys=passkeys_in(events))
    report.events = len(events)
    report.checkpoints = 0 if checkpoint is None else 1
    return report


def _checkpoint(
    evidence: dict[str, Any], keys: PublicKeys, tenant: str, report: Report
) -> Checkpoint | None:
    try:
        checkpoint = open_checkpoint(str(evidence.get("checkpoint")), keys)
    except NoteRejected as exc:
        report.fail("checkpoint_signature", str(exc))
        return None
    if not checkpoint.origin.endswith("/" + quote(tenant, safe="")):
        report.fail("checkpoint_signature", f"checkpoint of log {checkpoint.origin!r}")
    return checkpoint


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


def _check_stated(claims: dict[str, Any], events: list[Any], report: Report) -> None:
    expected = stated_claims(events)
    if not expected:
        report.fail("receipt_mismatch", "the evidence lacks the proposal or its outcome")
        return
    for name in STATED:
        if claims.get(name) != expected.get(name):
            report.fail("receipt_mismatch", f"the receipt's {name!r} differs from its events")
