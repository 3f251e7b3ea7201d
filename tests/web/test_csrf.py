"""CSRF: every POST of the pages needs this session's token; without it nothing happens."""

from __future__ import annotations

from datetime import UTC, datetime

from signoff import ProposalStatus
from signoff.web._csrf import CsrfGuard
from signoff.web._session import WebSession
from tests.conftest import AGENT, APPROVER, NO_ROLE
from tests.web.conftest import Pages, hidden_fields


def test_a_decision_without_the_token_is_refused_and_decides_nothing(pages: Pages) -> None:
    """403, the proposal still awaits confirmation, no ledger entry."""
    pages.sign_in(APPROVER)
    proposal = pages.propose()
    form = pages.decision_form(proposal)
    del form["csrf_token"]
    response = pages.post_decision(proposal, form)
    assert response.status_code == 403 and "CSRF" in response.text
    assert pages.world.gate.proposal(AGENT, proposal.proposal_id).status is (
        ProposalStatus.AWAITING_CONFIRMATION
    )
    assert pages.approvals(proposal) == 0 and pages.world.ledger_amounts() == []


def test_another_sessions_token_is_refused(pages: Pages) -> None:
    """A token copied from someone else's session does not match this one."""
    pages.sign_in(NO_ROLE)
    foreign = hidden_fields(pages.client.get("/ui/inbox").text)["csrf_token"]
    pages.sign_in(APPROVER)
    proposal = pages.propose()
    form = {**pages.decision_form(proposal), "csrf_token": foreign}
    assert pages.post_decision(proposal, form).status_code == 403
    assert pages.approvals(proposal) == 0


def test_signing_in_and_out_needs_the_token_too(pages: Pages) -> None:
    """Login CSRF: a cross-site form cannot sign a browser in as someone else."""
    pages.client.get("/ui/sign-in")
    response = pages.client.post("/ui/sign-in/demo", data={"user": "alice"}, follow_redirects=False)
    assert response.status_code == 403
    assert pages.client.get("/ui/inbox", follow_redirects=False).status_code == 303
    pages.sign_in(APPROVER)
    assert pages.client.post("/ui/sign-out", follow_redirects=False).status_code == 403
    assert pages.client.get("/ui/inbox").status_code == 200


def test_the_token_changes_when_someone_signs_in(pages: Pages) -> None:
    """The anonymous session's token is worthless once the session id rotates."""
    before = hidden_fields(pages.client.get("/ui/sign-in").text)["csrf_token"]
    pages.sign_in(APPROVER)
    after = hidden_fields(pages.client.get("/ui/inbox").text)["csrf_token"]
    assert before != after


def test_a_post_without_any_session_is_refused(pages: Pages) -> None:
    """No cookie at all: 403, never a decision and never a 500."""
    proposal = pages.propose()
    response = pages.post_decision(proposal, {"decision": "approve", "expected_version": "1"})
    assert response.status_code == 403 and pages.approvals(proposal) == 0


def test_guard_matches_only_its_own_session() -> None:
    """HMAC of the session id under the server key; wrong type, session or key never match."""
    session = WebSession.anonymous(datetime.now(UTC))
    guard = CsrfGuard(b"k" * 32)
    assert guard.matches(session, guard.token(session))
    assert not guard.matches(None, guard.token(session))
    assert not guard.matches(session, None)
    assert not guard.matches(WebSession.anonymous(datetime.now(UTC)), guard.token(session))
    assert not CsrfGuard(b"j" * 32).matches(session, guard.token(session))
