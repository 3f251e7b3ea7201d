"""The OpenAI Agents SDK, offline with a scripted model: a person's signoff is what writes."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner, RunState, TResponseInputItem
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from signoff import AsyncGate, ProposalStatus
from signoff.integrations.openai_agents import SignoffApprovals, signoff_tools
from tests.conftest import AGENT, REFUND, World

OFFLINE = RunConfig(tracing_disabled=True)


@pytest.fixture
def agate(world: World) -> Iterator[AsyncGate]:
    gate = AsyncGate(world.gate, max_threads=2)
    yield gate
    gate.close()


def outputs(call: ModelCall) -> list[dict[str, Any]]:
    """The tool answers the model has seen so far, newest last."""
    items = call.input if isinstance(call.input, list) else []
    answers = [i["output"] for i in items if i.get("type") == "function_call_output"]
    return [json.loads(a) if a.startswith("{") else {"text": a} for a in answers]


def planner(call: ModelCall) -> Any:
    """A model that requests, later reads the status, executes with the token, and reports."""
    seen = outputs(call)
    last = seen[-1] if seen else None
    user_turns = [i for i in call.input if isinstance(i, dict) and i.get("role") == "user"]
    if last is None:
        return [function_call("request_refund_order_confirmation", REFUND, call_id="c1")]
    if last.get("kind") == "execution":
        return [assistant_message(f"done: {last['receipt']['request_key']}")]
    if last.get("confirmation_token"):
        token = last["confirmation_token"]
        args = {"proposal_id": last["proposal_id"], "confirmation_token": token}
        return [function_call("execute_confirmed_refund_order", args, call_id="c3")]
    if len(user_turns) > 1 and len(seen) == 1:
        status = {"proposal_id": last["proposal_id"]}
        return [function_call("get_proposal_status", status, call_id="c2")]
    return [assistant_message(f"waiting for a person: {last['status']}")]


def test_request_then_a_person_confirms_then_the_agent_executes_once(
    world: World, agate: AsyncGate
) -> None:
    """Run 1 proposes and stops; a person approves in signoff; run 2 executes; one refund."""
    model = ScriptedModel([ModelStep.respond(planner) for _ in range(6)])
    agent = Agent(name="support", tools=signoff_tools(agate, AGENT), model=model)

    async def conversation() -> tuple[str, str]:
        first = await Runner.run(agent, "refund ord_1001", run_config=OFFLINE)
        assert world.ledger_amounts() == []
        (proposal,) = world.gate.proposals(AGENT)
        assert proposal.status is ProposalStatus.AWAITING_CONFIRMATION
        world.approve(proposal)
        asked: TResponseInputItem = {"role": "user", "content": "did they confirm?"}
        follow_up = [*first.to_input_list(), asked]
        second = await Runner.run(agent, follow_up, run_config=OFFLINE)
        return str(first.final_output), str(second.final_output)

    first, second = asyncio.run(conversation())
    assert first == "waiting for a person: awaiting_confirmation"
    assert second.startswith("done: refund_order:acme:act_")  # the request key
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def gated_run(world: World, approvals: SignoffApprovals) -> tuple[Agent[Any], ScriptedModel]:
    def write(call: ModelCall) -> Any:
        seen = outputs(call)
        if not seen:
            return [function_call("refund_order", REFUND, call_id="w1")]
        return [assistant_message(seen[-1].get("text") or json.dumps(seen[-1]))]

    model = ScriptedModel([ModelStep.respond(write) for _ in range(2)])
    return Agent(name="support", tools=approvals.tools(), model=model), model


def test_the_sdk_approval_alone_executes_nothing(world: World, agate: AsyncGate) -> None:
    """needs_approval → a signoff proposal; state.approve() without signoff: ledger unchanged."""
    approvals = SignoffApprovals(agate, AGENT)
    agent, _ = gated_run(world, approvals)

    async def run() -> dict[str, Any]:
        interrupted = await Runner.run(agent, "refund ord_1001", run_config=OFFLINE)
        state = interrupted.to_state()
        (pending,) = await approvals.pending(state)
        assert pending.proposal.status is ProposalStatus.AWAITING_CONFIRMATION
        assert pending.confirm_url.endswith(f"/ui/proposals/{pending.proposal.proposal_id}")
        state.approve(pending.item)  # the SDK's own approval, no person in signoff
        resumed = await Runner.run(agent, state, run_config=OFFLINE)
        return json.loads(str(resumed.final_output))  # type: ignore[no-any-return]

    answer = asyncio.run(run())
    assert (answer["kind"], answer["status"]) == ("proposal", "awaiting_confirmation")
    assert world.ledger_amounts() == []
    (proposal,) = world.gate.proposals(AGENT)
    assert proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    assert world.gate.execution_for(AGENT, proposal.proposal_id) is None


def test_a_signoff_decision_releases_the_run_across_a_restart(
    world: World, agate: AsyncGate
) -> None:
    """The run state is saved, a person approves in signoff, a new process resumes: one refund."""
    agent, _ = gated_run(world, SignoffApprovals(agate, AGENT))

    async def run() -> dict[str, Any]:
        interrupted = await Runner.run(agent, "refund ord_1001", run_config=OFFLINE)
        saved = interrupted.to_state().to_string()
        (proposal,) = world.gate.proposals(AGENT)
        world.approve(proposal)
        # Another process: new adapter (nothing remembered), same store, the saved state.
        approvals = SignoffApprovals(agate, AGENT)
        fresh, _ = gated_run(world, approvals)
        state = await RunState.from_string(fresh, saved)
        assert await approvals.release(state) == []
        resumed = await Runner.run(fresh, state, run_config=OFFLINE)
        return json.loads(str(resumed.final_output))  # type: ignore[no-any-return]

    answer = asyncio.run(run())
    assert (answer["kind"], answer["status"]) == ("execution", "succeeded")
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    assert len(world.gate.proposals(AGENT)) == 1  # resuming never proposed again


def test_a_signoff_rejection_rejects_the_call(world: World, agate: AsyncGate) -> None:
    """A person declines in signoff: release() rejects the SDK call; the model is told why."""
    approvals = SignoffApprovals(agate, AGENT)
    agent, _ = gated_run(world, approvals)

    async def run() -> str:
        interrupted = await Runner.run(agent, "refund ord_1001", run_config=OFFLINE)
        (proposal,) = world.gate.proposals(AGENT)
        world.reject(proposal)
        state = interrupted.to_state()
        assert await approvals.release(state) == []
        resumed = await Runner.run(agent, state, run_config=OFFLINE)
        return str(resumed.final_output)

    assert "was declined; nothing was done" in asyncio.run(run())
    assert world.ledger_amounts() == []
