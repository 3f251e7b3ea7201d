"""LangChain tools: request, status and execute through the real langchain-core tool interface."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from langchain_core.tools import BaseTool

from signoff.agents import agent_tools
from signoff.integrations.langgraph import signoff_langchain_tools
from tests.conftest import AGENT, REFUND, World


def call(tools: Mapping[str, BaseTool], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return json.loads(tools[name].invoke(arguments))  # type: ignore[no-any-return]


def test_the_tools_request_then_execute_once_after_a_person_confirms(world: World) -> None:
    """The model-facing schemas are signoff's strict ones; the write happens once."""
    tools = {t.name: t for t in signoff_langchain_tools(world.gate, AGENT)}
    assert set(tools) == {spec.name for spec in agent_tools(world.gate.catalog)}
    schema = tools["request_refund_order_confirmation"].tool_call_schema
    assert isinstance(schema, dict) and schema["additionalProperties"] is False
    requested = call(tools, "request_refund_order_confirmation", REFUND)
    assert requested["status"] == "awaiting_confirmation"
    early = call(tools, "get_proposal_status", {"proposal_id": requested["proposal_id"]})
    assert early["confirmation_token"] is None
    world.approve(world.gate.proposal(AGENT, requested["proposal_id"]))
    status = call(tools, "get_proposal_status", {"proposal_id": requested["proposal_id"]})
    token = status["confirmation_token"]
    execute = {"proposal_id": status["proposal_id"], "confirmation_token": token}
    done = call(tools, "execute_confirmed_refund_order", execute)
    again = call(tools, "execute_confirmed_refund_order", execute)
    assert (done["kind"], done["status"]) == ("execution", "succeeded")
    assert again["kind"] == "refusal" and again["code"] == "already_consumed"
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_refusal_is_an_answer_not_an_exception(world: World) -> None:
    """A boolean amount comes back as a structured refusal the model can read."""
    tools = {t.name: t for t in signoff_langchain_tools(world.gate, AGENT)}
    refused = call(tools, "request_refund_order_confirmation", {**REFUND, "amount_minor": True})
    assert (refused["kind"], refused["code"]) == ("refusal", "invalid_arguments")
    assert world.gate.proposals(AGENT) == []
