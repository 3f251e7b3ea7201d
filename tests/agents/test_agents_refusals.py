"""Every refusal a model can meet has a code, an action and a next step; none collapse."""

from __future__ import annotations

import pytest

from signoff import exceptions
from signoff.agents import refusal_payload
from signoff.agents._outputs import REFUSAL_ACTIONS


def _refusal_classes() -> list[type[exceptions.SignoffError]]:
    found = []
    for value in vars(exceptions).values():
        if isinstance(value, type) and issubclass(value, exceptions.SignoffError):
            found.append(value)
    return sorted(found, key=lambda cls: cls.code)


@pytest.mark.parametrize("cls", _refusal_classes(), ids=lambda cls: cls.code)
def test_each_code_maps_to_an_action_and_a_next_step(cls: type[exceptions.SignoffError]) -> None:
    """The answer names the code, one of the five actions and a sentence to follow."""
    payload = refusal_payload(cls("no", proposal_id="prop_1"), write_tool="refund_order")
    if cls is exceptions.ClarificationNeeded:
        assert payload["kind"] == "clarification"
        return
    assert payload["kind"] == "refusal"
    assert payload["code"] == cls.code
    assert payload["action"] in REFUSAL_ACTIONS
    assert len(payload["next_step"]) > 20
    assert payload["details"] == {"proposal_id": "prop_1"}


def test_expired_and_unknown_lead_to_different_actions() -> None:
    """expired → ask for a new proposal; unknown → check the status, never retry blindly."""
    expired = refusal_payload(exceptions.Expired("late"), write_tool="refund_order")
    unknown = refusal_payload(exceptions.OutcomeUnknown("lost"), write_tool="refund_order")
    assert expired["action"] == "new_proposal"
    assert "request_refund_order_confirmation" in expired["next_step"]
    assert unknown["action"] == "check_status"
    assert "Never retry blindly" in unknown["next_step"]
    assert "get_proposal_status" in unknown["next_step"]


@pytest.mark.parametrize(
    ("status", "action"),
    [
        ("awaiting_confirmation", "check_status"),
        ("declined", "stop"),
        ("cancelled", "stop"),
        ("expired", "new_proposal"),
        ("revoked", "stop"),
        ("executing", "check_status"),
    ],
)
def test_invalid_state_advice_follows_the_proposal_status(status: str, action: str) -> None:
    """declined ≠ cancelled ≠ expired: each state the proposal is in gets its own advice."""
    payload = refusal_payload(exceptions.InvalidState("not now", status=status))
    assert payload["action"] == action
