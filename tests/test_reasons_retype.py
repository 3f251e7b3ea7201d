"""Reject reasons are the tool's own; re-typing compares what the page displays, as typed."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signoff import (
    Catalog,
    Decision,
    DecisionKind,
    Gate,
    Principal,
    Proposal,
    ProposalStatus,
    SQLiteStore,
)
from signoff.exceptions import InvalidRequest, RetypeMismatch
from signoff.testing import FakeProvider
from tests.conftest import AGENT, APPROVER, World
from tests.docs_tool import load_first_tool

ERIN = Principal("erin", "acme", roles=frozenset({"email_approver"}))
HELPDESK = Principal("u_7", "acme", actor="agent:helpdesk")
EMAIL = {"to": "kim@partner.example", "subject": "Invoice", "body": "Hello Kim,\n\n  attached."}


def reject(world: World, proposal: Proposal, code: str, *, by: Principal = APPROVER) -> Any:
    decision = Decision(DecisionKind.REJECT, proposal.version, code, "no")
    return world.gate.decide(by, proposal.proposal_id, decision, idempotency_key=f"r-{code}")


def test_a_refund_offers_wrong_amount_and_a_note_does_not(world: World) -> None:
    """Each tool's reasons, `other` always; a reason the tool does not offer is refused."""
    refund, note = world.gate.catalog.get("refund_order"), world.gate.catalog.get("add_order_note")
    assert list(refund.reasons()) == [
        "wrong_amount",
        "wrong_target",
        "policy",
        "suspicious",
        "other",
    ]
    assert list(note.reasons()) == ["wrong_target", "wrong_words", "other"]
    proposal = world.propose()
    with pytest.raises(InvalidRequest, match="reason_code must be one of wrong_amount"):
        reject(world, proposal, "wrong_words")
    assert reject(world, proposal, "wrong_amount").proposal.status is ProposalStatus.DECLINED


def test_other_is_always_a_reason(world: World) -> None:
    """`other` (with the text) rejects any tool's proposal."""
    note = world.gate.propose(AGENT, "add_order_note", {"order_id": "ord_1001", "note": "hi"})
    customer = Principal("u_42", "acme")
    declined = reject(world, note, "other", by=customer).proposal
    assert declined.status is ProposalStatus.DECLINED
    assert declined.approvals[-1].reason_code == "other"


@dataclass
class Mail:
    gate: Gate
    outbox: FakeProvider
    module: Any


@pytest.fixture
def mail(tmp_path: Path) -> Iterator[Mail]:
    module = load_first_tool(tmp_path)

    class RetypeBody(module.SendEmail):  # type: ignore[misc, name-defined]
        retype = ("to", "body")

    outbox = FakeProvider(tmp_path / "outbox.sqlite")
    store = SQLiteStore(tmp_path / "signoff.db")
    store.migrate()
    gate = Gate(Catalog([RetypeBody(outbox)]), store, token_key=b"k" * 32)
    try:
        yield Mail(gate, outbox, module)
    finally:
        store.close()


def approve(mail: Mail, proposal: Proposal, retyped: dict[str, str], key: str) -> Any:
    decision = Decision(DecisionKind.APPROVE, proposal.version, retyped=retyped)
    return mail.gate.decide(ERIN, proposal.proposal_id, decision, idempotency_key=key)


@pytest.mark.parametrize(
    "typed_body",
    ["Hello Kim, attached.", "Hello Kim,\n\n  attached.", "  Hello Kim,\nattached. "],
    ids=["one-line", "exact", "other-breaks"],
)
def test_a_multi_line_value_is_retyped_as_read(mail: Mail, typed_body: str) -> None:
    """Line breaks and runs of spaces count as one space on both sides; words must match."""
    proposal = mail.gate.propose(HELPDESK, "send_email", EMAIL)
    result = approve(mail, proposal, {"to": EMAIL["to"], "body": typed_body}, "ok")
    assert result.proposal.status is ProposalStatus.CONFIRMED


@pytest.mark.parametrize(
    ("typed_to", "typed_body"),
    [
        ("kim@partner.exampl", "Hello Kim, attached."),
        ("kim@partner.example", "Hello Kim attached."),
        ("kim@partner.example", ""),
    ],
    ids=["recipient", "punctuation", "empty"],
)
def test_a_different_value_is_refused(mail: Mail, typed_to: str, typed_body: str) -> None:
    """A changed character, a dropped comma or nothing: refused, nothing decided, nothing sent."""
    proposal = mail.gate.propose(HELPDESK, "send_email", EMAIL)
    with pytest.raises(RetypeMismatch):
        approve(mail, proposal, {"to": typed_to, "body": typed_body}, "no")
    assert mail.gate.proposal(HELPDESK, proposal.proposal_id).approvals == ()
    assert mail.outbox.records() == []


def test_compatibility_forms_are_the_same_letters(mail: Mail) -> None:
    """A full-width `ｋ` from an input method is the `k` on the page (NFKC on both sides)."""
    proposal = mail.gate.propose(HELPDESK, "send_email", EMAIL)
    typed = {"to": "ｋim@partner.example", "body": EMAIL["body"]}
    assert approve(mail, proposal, typed, "nfkc").proposal.status is ProposalStatus.CONFIRMED
