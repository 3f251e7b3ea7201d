"""An OpenAI Agents SDK agent whose write waits for a person in signoff — offline.

    python examples/openai_agents_sdk.py

The model calls ``refund_order`` itself; the tool ``needs_approval``, which
signoff turns into a proposal. The run stops there. The SDK's own approval
would execute nothing; a person (alice) approves the proposal in signoff, and
``SignoffApprovals.release`` lets the saved run continue: one refund, with a
receipt. A scripted stand-in plays the model (no network, no API key); give
the agent a real model instead and nothing else changes.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, RunState
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call

from signoff import AsyncGate, Decision, DecisionKind, Gate, Principal, SQLiteStore
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.integrations.openai_agents import SignoffApprovals

AGENT = Principal("u_42", "acme", actor="agent:support-bot")
APPROVER = Principal("alice", "acme", roles=frozenset({"refund_approver"}))
REFUND = {"order_id": "ord_1001", "amount_minor": 19900, "currency": "CNY", "reason": "damaged"}
OFFLINE = RunConfig(tracing_disabled=True)


def scripted_model() -> ScriptedModel:
    """Calls refund_order once, then reports what the tool answered."""

    def respond(call: ModelCall) -> Any:
        answers = [i["output"] for i in call.input if i.get("type") == "function_call_output"]
        if not answers:
            return [function_call("refund_order", REFUND, call_id="call_1")]
        return [assistant_message(answers[-1])]

    return ScriptedModel([ModelStep.respond(respond), ModelStep.respond(respond)])


async def run(gate: AsyncGate) -> dict[str, Any]:
    approvals = SignoffApprovals(gate, AGENT)
    agent = Agent(name="support", tools=approvals.tools(), model=scripted_model())
    interrupted = await Runner.run(agent, "Please refund order ord_1001", run_config=OFFLINE)
    state = interrupted.to_state()
    (pending,) = await approvals.pending(state)
    print(f"waiting for a person: {pending.proposal.proposal_id} at {pending.confirm_url}")
    saved = state.to_string()  # keep it while the person decides (a day, a restart)

    # The person approves exactly that proposal in signoff (here: what the page does).
    proposal = gate.gate.proposal(APPROVER, pending.proposal.proposal_id)
    decision = Decision(DecisionKind.APPROVE, proposal.version)
    await gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="page-click-1")

    state = await RunState.from_string(agent, saved)
    still_waiting = await approvals.release(state)
    assert still_waiting == []
    resumed = await Runner.run(agent, state, run_config=OFFLINE)
    return json.loads(str(resumed.final_output))  # type: ignore[no-any-return]


def main(workdir: Path) -> int:
    shop = DemoShop(str(workdir / "shop.sqlite"))
    seed_demo_orders(shop)
    provider = RefundProvider(shop)
    store = SQLiteStore(workdir / "signoff.db")
    store.migrate()
    gate = AsyncGate(Gate(demo_catalog(shop, provider), store))
    try:
        answer = asyncio.run(run(gate))
        print(f"execution: {answer['status']}, receipt {answer['receipt']['request_key']}")
        ledger = [(e.order_id, e.amount_minor, e.currency) for e in provider.ledger("acme")]
        print(f"provider ledger: {ledger}")
        return 0 if answer["status"] == "succeeded" and len(ledger) == 1 else 1
    finally:
        gate.close()
        store.close()
        shop.close()


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as directory:
        sys.exit(main(Path(directory)))
