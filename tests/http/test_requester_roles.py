"""Issue 23 (High): the requester's roles go through the role directory at every step.

Sam is support staff: with the role he may ask for a note or a refund on another
customer's order. Once an admin withdrew it in the directory (both modes, both stores),
his token still claims it — and nothing he asks with it may be proposed, confirmed or
executed: the shop's note table and the provider's ledger stay empty.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import Principal, ResourceState
from signoff.demo._note_tool import AddOrderNote
from tests.conftest import APPROVER
from tests.http.conftest import assert_problem
from tests.redteam import SAM, SAMS_AGENT, STORES, Served, serve, sign_in_with_token
from tests.web.conftest import hidden_fields

MODES = ("grants", "revocations")
NOTE = {"order_id": "ord_1001", "note": "customer called about the parcel"}


@pytest.fixture(params=[(s, m) for s in STORES for m in MODES], ids=lambda p: "-".join(p))
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    store, mode = request.param
    with serve(store, tmp_path, role_directory=mode) as server:
        if mode == "grants":
            server.directory.grant("acme", "sam", "support", by="ops")
            server.directory.grant("acme", "alice", "refund_approver", by="ops")
        yield server


def _revoke_sam(served: Served) -> None:
    assert served.directory.revoke("acme", "sam", "support", by="olga")


def test_a_revoked_requester_cannot_propose_a_note_or_a_refund_on_anothers_order(
    served: Served,
) -> None:
    _revoke_sam(served)
    assert_problem(served.propose("add_order_note", SAMS_AGENT, **NOTE), 403, "forbidden")
    assert_problem(served.propose("refund_order", SAMS_AGENT), 403, "forbidden")
    assert served.audit("proposal.created") == []
    assert served.notes() == [] and served.ledger() == []


def test_a_revoked_requester_cannot_confirm_his_own_note(served: Served) -> None:
    proposal = served.proposed("add_order_note", SAMS_AGENT, **NOTE)
    _revoke_sam(served)
    assert_problem(served.decide(proposal, SAM), 409, "requester_revoked")
    assert served.audit("decision.approved") == []
    [refusal] = served.audit("refusal")
    assert refusal.payload()["code"] == "requester_revoked"
    assert served.notes() == []


def test_a_note_confirmed_before_the_revocation_is_not_executed(served: Served) -> None:
    proposal = served.proposed("add_order_note", SAMS_AGENT, **NOTE)
    assert served.decide(proposal, SAM).status_code == 200
    token = served.pick_up(proposal, SAMS_AGENT).json()["confirmation_token"]
    _revoke_sam(served)
    assert_problem(served.execute(proposal, token, SAMS_AGENT), 409, "requester_revoked")
    assert served.notes() == []
    assert served.audit("token.consumed") == []
    # Granted again, the same confirmation runs once: the refusal changed nothing.
    served.directory.grant("acme", "sam", "support", by="olga")
    assert served.execute(proposal, token, SAMS_AGENT).status_code == 200
    assert served.notes() == [NOTE["note"]]


def test_a_refund_sam_asked_for_is_not_approved_or_executed_after_the_revocation(
    served: Served,
) -> None:
    approved_first = served.proposed("refund_order", SAMS_AGENT)
    waiting = served.proposed("refund_order", SAMS_AGENT, order_id="ord_1002")
    assert served.decide(approved_first, APPROVER).status_code == 200
    token = served.pick_up(approved_first, SAMS_AGENT).json()["confirmation_token"]
    _revoke_sam(served)
    assert_problem(served.decide(waiting, APPROVER), 409, "requester_revoked")
    assert_problem(served.execute(approved_first, token, SAMS_AGENT), 409, "requester_revoked")
    assert served.ledger() == []
    # A rejection stays possible: refusing to act never needs the requester's standing.
    rejected = served.decide(waiting, APPROVER, decision="reject", reason_code="policy")
    assert rejected.status_code == 200, rejected.text


def test_the_tool_reads_with_the_roles_the_directory_confirms_now(served: Served) -> None:
    """What `read_state` receives is the directory's answer, not the token's claim."""
    seen: list[frozenset[str]] = []
    tool = served.state.gate.catalog.get("add_order_note")
    assert isinstance(tool, AddOrderNote)
    original = AddOrderNote.read_state

    def spy(self: AddOrderNote, args: object, principal: Principal) -> ResourceState:
        seen.append(principal.roles)
        return original(self, args, principal)  # type: ignore[arg-type]

    own = {"order_id": "ord_1001", "note": "mine"}
    customer = Principal("u_42", "acme", frozenset({"support"}), actor="agent:support-bot")
    if served.directory.mode == "revocations":
        served.directory.revoke("acme", "u_42", "support", by="olga")
    # In grants mode no one granted u_42 `support`; in revocations mode it was withdrawn:
    # either way his token's claim never reaches the tool.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(AddOrderNote, "read_state", spy)
        served.proposed("add_order_note", customer, **own)
    assert seen == [frozenset()]


def test_a_revoked_requester_cannot_confirm_his_note_on_the_page(served: Served) -> None:
    """The same refusal where people confirm: sam's page session, opened with his token."""
    proposal = served.proposed("add_order_note", SAMS_AGENT, **NOTE)
    assert sign_in_with_token(served, served.token(SAM)).status_code == 303
    _revoke_sam(served)
    page = served.client.get(f"/ui/proposals/{proposal['proposal_id']}")
    assert page.status_code == 200, page.text
    form = {**hidden_fields(page.text, "approve"), "decision": "approve"}
    refused = served.client.post(
        f"/ui/proposals/{proposal['proposal_id']}/decision", data=form, follow_redirects=False
    )
    assert refused.status_code == 409, refused.text
    assert "requester_revoked" in refused.text or "no longer holds" in refused.text
    assert served.audit("decision.approved") == []
    assert served.notes() == []
