"""Agent tools over the shared `world`: the dispatcher, and a check of every answer's schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from signoff import Decision, DecisionKind, Principal
from signoff.agents import AgentTools, OpenAIDispatcher
from tests.conftest import APPROVER, World

PUBLIC_URL = "https://signoff.example"


@pytest.fixture
def dispatcher(world: World) -> OpenAIDispatcher:
    return OpenAIDispatcher(world.gate, public_url=PUBLIC_URL)


def call(
    dispatcher: OpenAIDispatcher, name: str, arguments: dict[str, Any] | str, principal: Principal
) -> dict[str, Any]:
    """One model tool call: JSON text in, JSON text out; the answer must match its schema."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    payload: dict[str, Any] = json.loads(dispatcher.dispatch(name, text, principal))
    check_output(dispatcher.tools, name, payload)
    return payload


def check_output(tools: AgentTools, name: str, payload: dict[str, Any]) -> None:
    spec = next((t for t in tools.definitions if t.name == name), None)
    schema = spec.output_schema if spec is not None else {"type": "object"}
    jsonschema.Draft202012Validator(schema).validate(payload)


def approve(world: World, proposal_id: str, *, by: Principal = APPROVER) -> None:
    proposal = world.gate.proposal(by, proposal_id)
    world.gate.decide(
        by,
        proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key=f"approve-{proposal_id}",
    )
