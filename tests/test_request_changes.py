"""Request changes: a distinct outcome with a structured suggestion; the agent is told and
proposes anew naming the proposal it supersedes; the frozen proposal is never edited."""

from __future__ import annotations

import pytest

from signoff import Decision, DecisionKind, ProposalStatus
from signoff.exceptions import InvalidRequest, InvalidState, NotFound, SeparationOfDuties
from tests.conftest import AGENT, APPROVER, APPROVER_2, OTHER_TENANT, REFUND, World


def _request_changes(world: World, proposal_id: str, version: int = 1, **kw: object) -> None:
    world.gate.decide(
        APPROVER,
        proposal_id,
        Decision(
            DecisionKind.REQUEST_CHANGES,
            version,
            reason=str(kw.get("note", "refund half: the parcel was partly used")),
            suggestion=kw.get("fields", {"amount_minor": 9950}),  # type: ignore[arg-type]
        ),
        idempotency_key=str(kw.get("key", "changes-1")),
    )


def test_changes_requested_is_its_own_outcome_and_never_runs(world: World) -> None:
    """Not declined: its own status and audit kind; the suggestion kept; no token; frozen."""
    proposal = world.propose()
    _request_changes(world, proposal.proposal_id)
    returned = world.gate.proposal(AGENT, proposal.proposal_id)
    assert returned.status is ProposalStatus.CHANGES_REQUESTED
    assert returned.arguments == proposal.arguments and returned.args_digest == proposal.args_digest
    assert returned.changes_requested is not None
    assert returned.changes_requested.suggestion == {
        "note": "refund half: the parcel was partly used",
        "fields": {"amount_minor": 9950},
    }
    with pytest.raises(InvalidState):
        world.gate.confirmation_token(AGENT, proposal.proposal_id)
    with world.store.read() as tx:
        kinds = [e.kind for e in tx.audit_events()]
        event = next(e for e in tx.audit_events() if e.kind == "decision.changes_requested")
    assert "decision.rejected" not in kinds
    assert event.payload()["suggestion"]["fields"] == {"amount_minor": 9950}
    with pytest.raises(InvalidState):
        world.approve(returned, by=APPROVER_2)
    assert world.ledger_amounts() == []


def test_a_suggestion_is_checked(world: World) -> None:
    proposal = world.propose()
    with pytest.raises(InvalidRequest):
        _request_changes(world, proposal.proposal_id, note="", fields={})
    with pytest.raises(InvalidRequest):
        _request_changes(world, proposal.proposal_id, fields={"not_an_argument": 1}, key="c2")
    with pytest.raises(SeparationOfDuties):
        world.gate.decide(
            AGENT,
            proposal.proposal_id,
            Decision(DecisionKind.REQUEST_CHANGES, 1, reason="x"),
            idempotency_key="c3",
        )
    assert world.gate.proposal(AGENT, proposal.proposal_id).approvals == ()


def test_the_new_proposal_names_the_one_it_supersedes_and_runs_once(world: World) -> None:
    """The agent proposes anew with the suggestion: supersedes is frozen with it; approved and
    executed, the ledger shows the new amount only."""
    old = world.propose()
    _request_changes(world, old.proposal_id)
    new = world.gate.propose(
        AGENT, "refund_order", {**REFUND, "amount_minor": 9950}, supersedes=old.proposal_id
    )
    assert new.supersedes == old.proposal_id
    assert world.gate.proposal(APPROVER, new.proposal_id).supersedes == old.proposal_id
    with world.store.read() as tx:
        created = [e for e in tx.audit_events() if e.kind == "proposal.created"][-1]
    assert created.payload()["supersedes"] == old.proposal_id
    token = world.approve(new)
    world.gate.execute(AGENT, new.proposal_id, token, idempotency_key="x1")
    assert world.ledger_amounts() == [("ord_1001", 9950)]
    assert world.gate.proposal(AGENT, old.proposal_id).status is ProposalStatus.CHANGES_REQUESTED


def test_only_a_returned_proposal_of_the_same_tool_and_person_can_be_superseded(
    world: World,
) -> None:
    pending = world.propose()
    with pytest.raises(InvalidState):
        world.gate.propose(AGENT, "refund_order", REFUND, supersedes=pending.proposal_id)
    with pytest.raises(NotFound):
        world.gate.propose(AGENT, "refund_order", REFUND, supersedes="prop_nope")
    returned = world.propose(order_id="ord_1002")
    _request_changes(world, returned.proposal_id, key="c9")
    with pytest.raises(InvalidRequest):
        world.gate.propose(
            AGENT,
            "add_order_note",
            {"order_id": "ord_1002", "note": "x"},
            supersedes=returned.proposal_id,
        )
    with pytest.raises(NotFound):  # another tenant's agent cannot even see it
        world.gate.propose(OTHER_TENANT, "refund_order", REFUND, supersedes=returned.proposal_id)
