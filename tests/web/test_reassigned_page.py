"""The page follows a reassignment: the new person gets the buttons, the role holder not."""

from __future__ import annotations

from signoff import Principal, ProposalStatus
from tests.conftest import APPROVER
from tests.web.conftest import Pages, hidden_fields

ADMIN = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
BOB = Principal("bob", "acme")
"""Signs in with no role claimed: only the reassignment lets him decide."""


def test_the_reassigned_person_approves_on_the_page(pages: Pages) -> None:
    proposal = pages.propose()
    pid = proposal.proposal_id
    pages.sign_in(BOB)
    assert proposal.preview.title not in pages.client.get("/ui/inbox").text
    moved = pages.world.gate.reassign(ADMIN, pid, to=["person:bob"], reason="alice is away")
    pages.sign_in(APPROVER)
    html = pages.client.get(f"/ui/proposals/{pid}").text
    assert 'class="approve"' not in html and 'id="not-entitled"' in html
    assert proposal.preview.title not in pages.client.get("/ui/inbox").text
    pages.sign_in(BOB)
    assert proposal.preview.title in pages.client.get("/ui/inbox").text
    html = pages.client.get(f"/ui/proposals/{pid}").text
    response = pages.post_decision(moved, hidden_fields(html, "approve"))
    assert response.status_code == 303, response.text
    decided = pages.world.gate.proposal(APPROVER, pid)
    assert decided.status is ProposalStatus.CONFIRMED
    assert [a.approver for a in decided.approvals] == ["bob"]
