"""get_mandate_status: an agent reads a standing approval's budget, count and history."""

from __future__ import annotations

from signoff import Decision, DecisionKind
from signoff.agents._service import AgentTools
from tests.conftest import AGENT, APPROVER, OTHER_TENANT, REFUND, World

DEMO = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}


def test_an_agent_reads_what_is_left_and_every_write(world: World) -> None:
    state = world.gate.propose_mandate(AGENT, "refund_order", DEMO, expires_in_seconds=600)
    mid = state.record.mandate_id
    world.gate.decide_mandate(APPROVER, mid, Decision(DecisionKind.APPROVE, 1), idempotency_key="m")
    proposal = world.gate.propose(AGENT, "refund_order", REFUND, mandate_id=mid)
    tools = AgentTools(world.gate)
    answer = tools.call(AGENT, "get_mandate_status", {"mandate_id": mid})
    assert not answer.is_error
    payload = answer.payload
    assert (payload["kind"], payload["status"], payload["approvers"]) == (
        "mandate",
        "active",
        ["alice"],
    )
    assert (payload["remaining_amount_minor"], payload["remaining_count"]) == (10100, 2)
    assert payload["writes"] == [
        {
            "proposal_id": proposal.proposal_id,
            "amount_minor": 19900,
            "currency": "CNY",
            "budget": "held",
            "proposal_status": "confirmed",
        }
    ]
    hidden = tools.call(OTHER_TENANT, "get_mandate_status", {"mandate_id": mid})
    assert hidden.is_error and hidden.payload["code"] == "not_found"
