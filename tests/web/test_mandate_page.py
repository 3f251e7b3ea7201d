"""The mandate page shows a standing approval's budget and every write under it, to its circle."""

from __future__ import annotations

from signoff import Decision, DecisionKind, Principal
from tests.conftest import AGENT, APPROVER, REFUND
from tests.web.conftest import Pages

DEMO = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}


def test_the_page_shows_what_is_left_and_each_write(pages: Pages) -> None:
    gate = pages.world.gate
    state = gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=600)
    mid = state.record.mandate_id
    gate.decide_mandate(APPROVER, mid, Decision(DecisionKind.APPROVE, 1), idempotency_key="m")
    proposal = gate.propose(AGENT, "refund_order", REFUND, mandate_id=mid)
    token = gate.confirmation_token(AGENT, proposal.proposal_id)
    gate.execute(AGENT, proposal.proposal_id, token)
    pages.sign_in(APPROVER)
    page = pages.client.get(f"/ui/mandates/{mid}")
    assert page.status_code == 200, page.text
    assert "Standing approval for refund_order" in page.text
    assert f'href="/ui/proposals/{proposal.proposal_id}/result"' in page.text
    assert "10100" in page.text and "counted" in page.text
    result = pages.client.get(f"/ui/proposals/{proposal.proposal_id}/result")
    assert f'href="/ui/mandates/{mid}"' in result.text


def test_outside_the_circle_it_is_no_such_page(pages: Pages) -> None:
    gate = pages.world.gate
    state = gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=600)
    pages.sign_in(Principal("carol", "acme"))
    page = pages.client.get(f"/ui/mandates/{state.record.mandate_id}")
    assert page.status_code == 404
    assert state.record.mandate_id not in page.text
