"""The request tool's reserved ids: under a mandate it is confirmed at once; a new request
names the proposal it supersedes; the tool's own arguments (and their digest) stay as sent."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from signoff import Decision, DecisionKind
from tests.conftest import AGENT, APPROVER, REFUND, World
from tests.mcp.conftest import call, client

REQUEST = "request_refund_order_confirmation"
EXECUTE = "execute_confirmed_refund_order"
LIMITS = {"currency": "CNY", "max_amount_minor": 20000, "total_amount_minor": 30000, "max_count": 3}


def _mandate(world: World) -> str:
    state = world.gate.propose_mandate(AGENT, "refund_order", LIMITS, expires_in_seconds=3600)
    decided = world.gate.decide_mandate(
        APPROVER,
        state.record.mandate_id,
        Decision(DecisionKind.APPROVE, state.record.version),
        idempotency_key="mandate-1",
    )
    assert decided.status == "active"
    return state.record.mandate_id


def test_a_request_under_a_mandate_is_confirmed_at_once_and_runs_once(
    world: World, server: MCPServer
) -> None:
    """signoff_mandate_id: confirmed with its token in the answer; executed, one refund; the
    args digest equals a plain request's of the same arguments."""
    mandate_id = _mandate(world)

    async def body() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with client(server) as c:
            covered = await call(
                c, REQUEST, {**REFUND, "signoff_mandate_id": mandate_id, "signoff_supersedes": None}
            )
            plain = await call(c, REQUEST, REFUND)  # the same arguments, no mandate
            token = covered["confirmation_token"]
            done = await call(
                c, EXECUTE, {"proposal_id": covered["proposal_id"], "confirmation_token": token}
            )
            return covered, done, plain

    covered, done, plain = anyio.run(body)
    assert covered["status"] == "confirmed"
    assert (done["kind"], done["status"]) == ("execution", "succeeded")
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    assert plain["status"] == "awaiting_confirmation"
    frozen = world.gate.proposal(AGENT, covered["proposal_id"])
    assert frozen.arguments == REFUND
    assert frozen.args_digest == world.gate.proposal(AGENT, plain["proposal_id"]).args_digest
    state = world.gate.mandate(AGENT, mandate_id)
    assert [w.proposal_id for w in state.writes] == [covered["proposal_id"]]


def test_a_new_request_names_the_proposal_it_supersedes(world: World, server: MCPServer) -> None:
    """A reviewer returns the refund; the agent asks again with signoff_supersedes."""
    old = world.gate.propose(AGENT, "refund_order", REFUND)
    world.gate.decide(
        APPROVER,
        old.proposal_id,
        Decision(DecisionKind.REQUEST_CHANGES, old.version, suggestion={"amount_minor": 9950}),
        idempotency_key="changes-1",
    )

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            arguments = {**REFUND, "amount_minor": 9950, "signoff_supersedes": old.proposal_id}
            return await call(c, REQUEST, arguments)

    answer = anyio.run(body)
    assert answer["status"] == "awaiting_confirmation"
    assert answer["supersedes"] == old.proposal_id
    new = world.gate.proposal(APPROVER, answer["proposal_id"])
    assert new.supersedes == old.proposal_id and new.arguments["amount_minor"] == 9950


def test_a_reserved_id_of_the_wrong_type_is_refused(world: World, server: MCPServer) -> None:
    """A number where an id goes: a structured refusal, and no proposal."""

    async def body() -> dict[str, Any]:
        async with client(server) as c:
            return await call(c, REQUEST, {**REFUND, "signoff_mandate_id": 7})

    answer = anyio.run(body)
    assert answer["kind"] == "refusal" and answer["code"] == "invalid_arguments"
    with world.store.read() as tx:
        assert tx.proposals("acme") == []
