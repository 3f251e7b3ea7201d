"""The in-band demo tool `add_order_note`: low risk, requester confirms, written once per key."""

from __future__ import annotations

import pytest

from signoff import Principal
from signoff.demo._note_tool import order_notes
from signoff.exceptions import Forbidden
from tests.conftest import AGENT, World

NOTE = {"order_id": "ord_1001", "note": "Ring twice."}


def test_policy_is_in_band_and_the_customer_confirms(world: World) -> None:
    """Low risk, reversible, requester_confirms and in_band; no role needed."""
    proposal = world.gate.propose(AGENT, "add_order_note", NOTE)
    assert proposal.risk.level == "low"
    assert proposal.policy["in_band"] is True
    assert proposal.policy["requester_confirms"] is True
    assert proposal.policy["role"] is None


def test_a_replayed_request_key_writes_one_note(world: World) -> None:
    """execute() twice with one request key: the same reference, one row; lookup finds it."""
    tool = world.gate.catalog.get("add_order_note")
    args = tool.parse(NOTE)
    state = tool.read_state(args, AGENT)
    first, second = tool.execute(args, "rk-1", state), tool.execute(args, "rk-1", state)
    assert first == second
    assert tool.lookup("rk-1") == first
    assert order_notes(world.shop, "acme", "ord_1001") == ["Ring twice."]


def test_a_changed_order_is_not_annotated(world: World) -> None:
    """The note is written only at the order version the person saw."""
    tool = world.gate.catalog.get("add_order_note")
    args = tool.parse(NOTE)
    state = tool.read_state(args, AGENT)
    world.shop.touch_order("acme", "ord_1001")
    outcome = tool.execute(args, "rk-2", state)
    assert getattr(outcome, "code", None) == "state_changed"
    assert order_notes(world.shop, "acme", "ord_1001") == []


def test_only_the_customer_or_support_may_ask(world: World) -> None:
    """Another person's agent is refused before any proposal exists."""
    stranger = Principal("carol", "acme", actor="agent:support-bot")
    with pytest.raises(Forbidden):
        world.gate.propose(stranger, "add_order_note", NOTE)
    assert world.gate.proposals(AGENT) == []
