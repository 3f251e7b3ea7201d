"""The pages in-process: what a person sees, and each refusal as the gate decides it."""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from signoff import Principal, ProposalStatus
from tests.conftest import AGENT, APPROVER, NO_ROLE, OTHER_TENANT
from tests.web.conftest import Pages, hidden_fields

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
CUSTOMER = Principal("u_42", "acme")


def test_inbox_lists_what_this_person_may_decide(pages: Pages) -> None:
    """The approver sees the refund; no-role, auditor, requester and other tenant do not."""
    refund = pages.propose()
    title = refund.preview.title
    pages.sign_in(APPROVER)
    assert title in pages.client.get("/ui/inbox").text
    for someone in (NO_ROLE, AUDITOR, CUSTOMER, OTHER_TENANT):
        pages.sign_in(someone)
        assert title not in pages.client.get("/ui/inbox").text


def test_requester_confirms_their_own_note(pages: Pages) -> None:
    """add_order_note: the customer the agent acts for confirms it; the approver does not."""
    note = pages.world.gate.propose(
        AGENT, "add_order_note", {"order_id": "ord_1002", "note": "call back"}
    )
    pages.sign_in(CUSTOMER)
    assert note.preview.title in pages.client.get("/ui/inbox").text
    pages.sign_in(APPROVER)
    assert note.preview.title not in pages.client.get("/ui/inbox").text


def test_detail_shows_every_value_the_gate_will_use(pages: Pages) -> None:
    """Display and machine values, target, impact, risk, role, requester, validity, digest."""
    proposal = pages.propose(rationale="customer says it arrived broken")
    pages.sign_in(APPROVER)
    html = pages.client.get(f"/ui/proposals/{proposal.proposal_id}").text
    text = re.sub(r"<[^>]+>", "", html)  # values are wrapped token by token
    for field in proposal.preview.fields:
        assert field.display_value in text
    for expected in (
        "¥199.00",
        "<code>19900</code>",
        "<code>&#34;CNY&#34;</code>",
        "order:ord_1001",
        proposal.preview.impact,
        proposal.preview.reversibility,
        "medium risk",
        "refund_approver",
        "agent:support-bot",
        proposal.args_digest,
        "2026-01-01 00:10:00 +00:00",
        "untrusted",
        "customer says it arrived broken",
        "unchanged since the agent asked",
    ):
        assert expected in html, expected


def test_detail_flags_a_business_state_that_moved(pages: Pages) -> None:
    """The order changed after the proposal: both versions shown, the change called out."""
    proposal = pages.propose()
    pages.world.shop.touch_order("acme", "ord_1001")
    pages.sign_in(APPROVER)
    html = pages.client.get(f"/ui/proposals/{proposal.proposal_id}").text
    assert 'id="state-changed"' in html and "state_changed" in html
    assert re.search(r"state version</th><td><code>1</code></td><td><code>2</code>", html)


def test_no_parameter_is_editable(pages: Pages) -> None:
    """The decision forms hold only hidden bookkeeping, re-typing, the reject reason, and a
    request for changes — words and suggested values for the agent's *next* proposal, never an
    edit of this one (tests/test_request_changes.py: the snapshot stays as it was)."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    html = pages.client.get(f"/ui/proposals/{proposal.proposal_id}").text
    names = set(re.findall(r'<(?:input|select|textarea)[^>]* name="([^"]+)"', html))
    suggestions = {f"suggest.{f.name}" for f in proposal.preview.fields}
    assert names == {
        "csrf_token",
        "decision",
        "expected_version",
        "idempotency_key",
        "reason_code",
        "reason",
        "changes_note",
        *suggestions,
    }


def test_approve_then_receipt_after_the_agent_executes(pages: Pages) -> None:
    """Approve → result page; the agent runs it → receipt on the page, one ledger entry."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    response = pages.post_decision(proposal, pages.decision_form(proposal))
    assert response.status_code == 303
    result = pages.client.get(response.headers["location"]).text
    assert "confirmed" in result and "Receipt" not in result
    token = pages.world.gate.confirmation_token(AGENT, proposal.proposal_id)
    assert token not in result
    pages.world.gate.execute(AGENT, proposal.proposal_id, token)
    result = pages.client.get(response.headers["location"]).text
    assert "Receipt" in result and proposal.request_key in result and token not in result
    assert pages.world.ledger_amounts() == [("ord_1001", 19900)]
    assert proposal.preview.title in pages.client.get("/ui/history").text


def test_reject_needs_a_reason_code_and_never_runs(pages: Pages) -> None:
    """No reason → 400 and nothing decided; with one → declined, no ledger entry."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal, "reject")
    assert pages.post_decision(proposal, form).status_code == 400
    assert pages.approvals(proposal) == 0
    done = pages.post_decision(proposal, {**form, "reason_code": "wrong_amount", "reason": "no"})
    assert done.status_code == 303
    declined = pages.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert declined.status is ProposalStatus.DECLINED
    assert declined.approvals[0].reason_code == "wrong_amount"
    assert pages.world.ledger_amounts() == [] and pages.world.refunded() == 0


def test_the_same_form_twice_is_one_decision(pages: Pages) -> None:
    """A double submit repeats the idempotency key: the second answer says so."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    first = pages.post_decision(proposal, form)
    second = pages.post_decision(proposal, form)
    assert second.headers["location"] == first.headers["location"] + "?repeat=1"
    assert "recorded once" in pages.client.get(second.headers["location"]).text
    assert pages.approvals(proposal) == 1


def test_two_simultaneous_submits_are_one_decision(pages: Pages) -> None:
    """Both requests of a double click in flight at once: one approval, both see the result."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    barrier = threading.Barrier(2)

    def submit() -> Any:
        barrier.wait()
        return pages.post_decision(proposal, form)

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(lambda _: submit(), range(2)))
    assert all(a.status_code == 303 and "/result" in a.headers["location"] for a in answers)
    assert pages.approvals(proposal) == 1


def test_a_stale_tab_gets_already_decided(pages: Pages) -> None:
    """Another form rendered before the decision → 409 naming who decided and when."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    first_tab = pages.decision_form(proposal)
    second_tab = pages.decision_form(proposal)
    assert pages.post_decision(proposal, first_tab).status_code == 303
    stale = pages.post_decision(proposal, second_tab)
    assert stale.status_code == 409
    assert "Already decided" in stale.text and "<strong>alice</strong>" in stale.text
    assert "2026-01-01 00:00:00 +00:00" in stale.text
    assert pages.approvals(proposal) == 1


def test_an_expired_proposal_is_refused(pages: Pages) -> None:
    """The server clock passed expires_at: 409 and nothing decided."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    pages.world.clock.advance(timedelta(minutes=10))
    response = pages.post_decision(proposal, form)
    assert response.status_code == 409 and "expired" in response.text
    assert pages.approvals(proposal) == 0


def test_outside_the_circle_the_page_is_404_and_a_forged_post_too(pages: Pages) -> None:
    """A colleague without the role may not see the proposal at all (rule 12)."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    pages.sign_in(NO_ROLE)
    page = pages.client.get(f"/ui/proposals/{proposal.proposal_id}")
    assert page.status_code == 404 and proposal.preview.title not in page.text
    inbox = pages.client.get("/ui/inbox").text
    forged = {**form, "csrf_token": hidden_fields(inbox)["csrf_token"]}
    assert pages.post_decision(proposal, forged).status_code == 404
    assert pages.approvals(proposal) == 0


@pytest.mark.parametrize("someone", [AUDITOR, CUSTOMER])
def test_no_approve_button_and_a_forged_post_is_refused(pages: Pages, someone: Principal) -> None:
    """An auditor, or the requester, sees it but has no form; posting one anyway is 403."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    pages.sign_in(someone)
    html = pages.client.get(f"/ui/proposals/{proposal.proposal_id}").text
    assert 'class="approve"' not in html and 'id="not-entitled"' in html
    forged = {**form, "csrf_token": hidden_fields(html)["csrf_token"]}
    assert pages.post_decision(proposal, forged).status_code == 403
    assert pages.approvals(proposal) == 0


def test_another_tenants_proposal_is_not_found(pages: Pages) -> None:
    """The same 404 page as an id that never existed: no existence leak."""
    proposal = pages.propose()
    pages.sign_in(OTHER_TENANT)
    theirs = pages.client.get(f"/ui/proposals/{proposal.proposal_id}")
    missing = pages.client.get("/ui/proposals/prop_does_not_exist")
    assert theirs.status_code == missing.status_code == 404
    assert proposal.preview.title not in theirs.text
    assert pages.client.get(f"/ui/proposals/{proposal.proposal_id}/result").status_code == 404
    assert pages.client.get("/ui/proposals/" + "x" * 300).status_code == 404


def test_high_risk_needs_the_amount_retyped(pages: Pages) -> None:
    """A mismatch is 422 with nothing decided; the shown amount re-typed approves."""
    pages.world.shop.add_order("acme", "ord_9000", owner="u_42", payable=500_000)
    proposal = pages.propose(order_id="ord_9000", amount_minor=250_000)
    pages.sign_in(APPROVER)
    html = pages.client.get(f"/ui/proposals/{proposal.proposal_id}").text
    assert 'name="retype.amount_minor"' in html and "high risk" in html
    form = hidden_fields(html, "approve")
    for typed in (None, "25000", "¥25,000.00"):
        data = form if typed is None else {**form, "retype.amount_minor": typed}
        response = pages.post_decision(proposal, data)
        assert response.status_code == 422 and 'id="retype-error"' in response.text
    assert pages.approvals(proposal) == 0
    ok = pages.post_decision(proposal, {**form, "retype.amount_minor": "¥2,500.00"})
    assert ok.status_code == 303
    assert pages.world.gate.proposal(APPROVER, proposal.proposal_id).status is (
        ProposalStatus.CONFIRMED
    )


@pytest.mark.parametrize(
    "change",
    [
        {"expected_version": "one"},
        {"expected_version": "0"},
        {"idempotency_key": "chosen-by-me"},
        {"decision": "maybe"},
        {"decision": "reject", "reason_code": "because"},
        {"decision": "reject", "reason_code": "other", "reason": "x" * 2001},
    ],
)
def test_a_malformed_form_is_a_400_not_a_decision(pages: Pages, change: dict[str, str]) -> None:
    """Bad version, key, decision or reason: 400 page, nothing decided, never a 500."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    response = pages.post_decision(proposal, {**pages.decision_form(proposal), **change})
    assert response.status_code == 400 and "text/html" in response.headers["content-type"]
    assert pages.approvals(proposal) == 0


def test_a_repeated_field_is_refused(pages: Pages) -> None:
    """Two values for one field are ambiguous: 400, nothing decided."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    form = pages.decision_form(proposal)
    body = "&".join(f"{k}={v}" for k, v in form.items()) + "&decision=reject"
    response = pages.client.post(
        f"/ui/proposals/{proposal.proposal_id}/decision",
        content=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 400 and pages.approvals(proposal) == 0


def test_get_never_decides(pages: Pages) -> None:
    """The decision and sign-out URLs answer GET with 405; reading a page changes nothing."""
    proposal = pages.propose()
    pages.sign_in(APPROVER)
    assert pages.client.get(f"/ui/proposals/{proposal.proposal_id}/decision").status_code == 405
    assert pages.client.get("/ui/sign-out").status_code == 405
    assert pages.approvals(proposal) == 0
