"""Deciding several proposals from the inbox: each on its own, answered per item."""

from __future__ import annotations

from signoff import ProposalStatus
from tests.conftest import AGENT, APPROVER, REFUND
from tests.web.conftest import Pages, hidden_fields


def _batch_form(html: str) -> dict[str, str]:
    return hidden_fields(html.split('id="batch"', 1)[1].split("</form>", 1)[0])


def test_approve_selected_decides_each_and_leaves_out_what_needs_more(pages: Pages) -> None:
    """Three selected: two approved (and executed once each), the high-risk one left out
    with the reason; a stale version is that item's refusal only."""
    gate = pages.world.gate
    first = gate.propose(AGENT, "refund_order", REFUND)
    second = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})
    high = gate.propose(
        AGENT, "refund_order", {**REFUND, "order_id": "ord_9200", "amount_minor": 300000}
    )
    stale = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1003"})
    pages.sign_in(APPROVER)
    inbox = pages.client.get("/ui/inbox").text
    assert 'form="batch"' in inbox and "Approve it on its own page" in inbox
    fields = {
        **_batch_form(inbox),
        "decision": "approve",
        f"select.{first.proposal_id}": "1",
        f"select.{second.proposal_id}": "1",
        f"select.{high.proposal_id}": "1",
        f"select.{stale.proposal_id}": "9",
    }
    answer = pages.client.post("/ui/decisions", data=fields)
    assert answer.status_code == 200, answer.text
    assert answer.text.count("Not decided") == 2
    assert "not_batchable" in answer.text and "version_conflict" in answer.text
    assert gate.proposal(APPROVER, first.proposal_id).status is ProposalStatus.CONFIRMED
    assert gate.proposal(APPROVER, second.proposal_id).status is ProposalStatus.CONFIRMED
    for p in (high, stale):
        assert gate.proposal(APPROVER, p.proposal_id).approvals == ()
    for n, p in enumerate((first, second)):
        token = gate.confirmation_token(AGENT, p.proposal_id)
        assert token is not None
        gate.execute(AGENT, p.proposal_id, token, idempotency_key=f"x{n}")
    assert sorted(pages.world.ledger_amounts()) == [("ord_1001", 19900), ("ord_1002", 19900)]
    again = pages.client.post("/ui/decisions", data=fields)
    assert again.text.count("(already recorded)") == 2


def test_reject_selected_needs_a_reason(pages: Pages) -> None:
    gate = pages.world.gate
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    pages.sign_in(APPROVER)
    fields = {
        **_batch_form(pages.client.get("/ui/inbox").text),
        "decision": "reject",
        f"select.{proposal.proposal_id}": "1",
    }
    assert pages.client.post("/ui/decisions", data=fields).status_code == 400
    fields["reason_code"] = "policy"
    assert pages.client.post("/ui/decisions", data=fields).status_code == 200
    assert gate.proposal(APPROVER, proposal.proposal_id).status is ProposalStatus.DECLINED
