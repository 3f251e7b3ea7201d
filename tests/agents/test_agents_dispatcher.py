"""The OpenAI dispatcher: a model's call in, a JSON answer out; each outcome distinct."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from signoff import Principal
from signoff.agents import OpenAIDispatcher
from signoff.demo import FaultMode
from signoff.exceptions import StoreUnavailable
from tests.agents.conftest import PUBLIC_URL, approve, call
from tests.conftest import AGENT, APPROVER, NO_ROLE, OTHER_TENANT, REFUND, World

REQUEST = "request_refund_order_confirmation"
EXECUTE = "execute_confirmed_refund_order"
STATUS = "get_proposal_status"


def _request(dispatcher: OpenAIDispatcher, **changes: Any) -> dict[str, Any]:
    return call(dispatcher, REQUEST, {**REFUND, **changes}, AGENT)


def _confirmed(world: World, dispatcher: OpenAIDispatcher) -> tuple[str, str]:
    """A proposal a person approved, and the token the agent picks up with the status tool."""
    proposal_id = _request(dispatcher)["proposal_id"]
    approve(world, proposal_id)
    status = call(dispatcher, STATUS, {"proposal_id": proposal_id}, AGENT)
    assert status["status"] == "confirmed"
    return proposal_id, status["confirmation_token"]


def _execute(dispatcher: OpenAIDispatcher, proposal_id: str, token: str) -> dict[str, Any]:
    arguments = {"proposal_id": proposal_id, "confirmation_token": token}
    return call(dispatcher, EXECUTE, arguments, AGENT)


def test_request_answers_awaiting_confirmation_with_preview_and_page(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """The success shape: proposal_id, awaiting_confirmation, preview, expires_at, confirm_url."""
    answer = _request(dispatcher)
    assert answer["kind"] == "proposal"
    assert answer["status"] == "awaiting_confirmation"
    assert answer["preview"]["title"] == "Refund ¥199.00 on order ord_1001"
    assert answer["expires_at"] == "2026-01-01T00:10:00+00:00"
    assert answer["confirm_url"] == f"{PUBLIC_URL}/ui/proposals/{answer['proposal_id']}"
    assert answer["confirmation_token"] is None
    assert "confirm_url" in answer["next_step"]
    assert world.ledger_amounts() == []


def test_request_then_approval_then_execute_refunds_once_with_a_receipt(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """The whole loop through the dispatcher: the ledger holds exactly one refund."""
    proposal_id, token = _confirmed(world, dispatcher)
    answer = _execute(dispatcher, proposal_id, token)
    assert answer["kind"] == "execution"
    assert answer["status"] == "succeeded"
    receipt = answer["receipt"]
    assert receipt["approvers"] == ["alice"]
    assert receipt["provider_reference"] == world.provider.ledger("acme")[0].reference
    assert world.ledger_amounts() == [("ord_1001", 19900)]
    assert world.refunded() == 19900


def test_replayed_execute_is_refused_with_the_original_receipt(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """A second execute is already_consumed, points at the receipt, and refunds nothing more."""
    proposal_id, token = _confirmed(world, dispatcher)
    first = _execute(dispatcher, proposal_id, token)
    again = _execute(dispatcher, proposal_id, token)
    assert again["kind"] == "refusal"
    assert again["code"] == "already_consumed"
    assert again["action"] == "check_status"
    assert again["details"]["receipt"] == first["receipt"]
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_status_hands_the_token_only_to_the_requesting_agent(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """Another agent of the same person, or the approver, sees the status but no token."""
    proposal_id, token = _confirmed(world, dispatcher)
    other_agent = Principal("u_42", "acme", actor="agent:other-bot")
    for principal in (other_agent, APPROVER):
        status = call(dispatcher, STATUS, {"proposal_id": proposal_id}, principal)
        assert status["status"] == "confirmed"
        assert status["confirmation_token"] is None
    assert token.startswith("sot_")


def test_a_missing_unit_is_a_clarification_and_creates_nothing(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """currency null → ask the person which currency; no proposal exists afterwards."""
    answer = _request(dispatcher, currency=None)
    assert answer["kind"] == "clarification"
    assert answer["code"] == "clarification_needed"
    assert answer["field"] == "currency"
    assert "Ask the user" in answer["next_step"]
    assert world.gate.proposals(AGENT) == []


@pytest.mark.parametrize(
    "arguments",
    [
        {**REFUND, "amount_minor": True},
        {**REFUND, "amount_minor": 199.0},
        {**REFUND, "surprise": 1},
        {"order_id": "ord_1001"},
        "not json",
        "[1, 2]",
    ],
)
def test_bad_arguments_are_refused_with_fix_arguments(
    world: World, dispatcher: OpenAIDispatcher, arguments: Any
) -> None:
    """Booleans, floats, unknown or missing fields and non-objects: invalid_arguments."""
    answer = call(dispatcher, REQUEST, arguments, AGENT)
    assert (answer["code"], answer["action"]) == ("invalid_arguments", "fix_arguments")
    assert world.gate.proposals(AGENT) == []


def test_an_unknown_tool_name_is_refused(dispatcher: OpenAIDispatcher) -> None:
    """A made-up tool (or a request for a tool not in the catalog) is unknown_tool."""
    for name in ("refund_order", "request_delete_everything_confirmation", "execute_confirmed_x"):
        answer = call(dispatcher, name, {}, AGENT)
        assert (answer["code"], answer["action"]) == ("unknown_tool", "stop")


def test_execute_arguments_are_strict(world: World, dispatcher: OpenAIDispatcher) -> None:
    """Extra fields such as an amount are refused: the model cannot re-supply arguments."""
    proposal_id, token = _confirmed(world, dispatcher)
    arguments = {"proposal_id": proposal_id, "confirmation_token": token, "amount_minor": 1}
    answer = call(dispatcher, EXECUTE, arguments, AGENT)
    assert answer["code"] == "invalid_arguments"
    assert world.ledger_amounts() == []


def test_a_proposal_of_another_tenant_is_not_found(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """Guessing an id across tenants reveals nothing: not_found, ask the user."""
    proposal_id = _request(dispatcher)["proposal_id"]
    answer = call(dispatcher, STATUS, {"proposal_id": proposal_id}, OTHER_TENANT)
    assert (answer["code"], answer["action"]) == ("not_found", "ask_user")


def test_someone_elses_order_is_forbidden(dispatcher: OpenAIDispatcher) -> None:
    """An agent for a person who owns neither the order nor a support role: forbidden, stop."""
    agent = Principal(NO_ROLE.subject, "acme", actor="agent:support-bot")
    answer = call(dispatcher, REQUEST, REFUND, agent)
    assert (answer["code"], answer["action"]) == ("forbidden", "stop")


def test_execute_before_confirmation_says_wait(world: World, dispatcher: OpenAIDispatcher) -> None:
    """A guessed token is invalid_token → check the status; nothing is refunded."""
    proposal_id = _request(dispatcher)["proposal_id"]
    answer = _execute(dispatcher, proposal_id, "sot_guessed")
    assert (answer["code"], answer["action"]) == ("invalid_token", "check_status")
    assert world.ledger_amounts() == []


def test_another_agent_cannot_use_the_token(world: World, dispatcher: OpenAIDispatcher) -> None:
    """The token is bound to the requesting agent: subject_mismatch for anyone else."""
    proposal_id, token = _confirmed(world, dispatcher)
    arguments = {"proposal_id": proposal_id, "confirmation_token": token}
    other = Principal("u_42", "acme", actor="agent:other-bot")
    answer = call(dispatcher, EXECUTE, arguments, other)
    assert (answer["code"], answer["action"]) == ("subject_mismatch", "stop")
    assert world.ledger_amounts() == []


def test_expired_asks_for_a_new_proposal(world: World, dispatcher: OpenAIDispatcher) -> None:
    """Past expires_at: token_expired → new_proposal, and the status already reads expired."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.clock.advance(timedelta(minutes=10))
    status = call(dispatcher, STATUS, {"proposal_id": proposal_id}, AGENT)
    assert (status["status"], status["confirmation_token"]) == ("expired", None)
    answer = _execute(dispatcher, proposal_id, token)
    assert (answer["code"], answer["action"]) == ("token_expired", "new_proposal")
    assert REQUEST in answer["next_step"]
    assert world.ledger_amounts() == []


def test_revoked_says_stop(world: World, dispatcher: OpenAIDispatcher) -> None:
    """A person revoked the confirmation: revoked → stop, nothing refunded."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.gate.revoke(APPROVER, proposal_id, reason="customer called back")
    answer = _execute(dispatcher, proposal_id, token)
    assert (answer["code"], answer["action"]) == ("revoked", "stop")
    assert world.ledger_amounts() == []


def test_state_changed_asks_for_a_new_proposal(world: World, dispatcher: OpenAIDispatcher) -> None:
    """The order moved after the preview: state_changed → new_proposal."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.shop.touch_order("acme", "ord_1001")
    answer = _execute(dispatcher, proposal_id, token)
    assert (answer["code"], answer["action"]) == ("state_changed", "new_proposal")
    assert world.ledger_amounts() == []


def test_approver_losing_the_role_stops_the_execution(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """approver_revoked → new_proposal; the refund does not happen."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.directory.revoke("acme", "alice", "refund_approver")
    answer = _execute(dispatcher, proposal_id, token)
    assert (answer["code"], answer["action"]) == ("approver_revoked", "new_proposal")
    assert world.ledger_amounts() == []


def test_execute_tool_of_another_tool_is_args_mismatch(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """A refund proposal through execute_confirmed_add_order_note: args_mismatch, nothing runs."""
    proposal_id, token = _confirmed(world, dispatcher)
    arguments = {"proposal_id": proposal_id, "confirmation_token": token}
    answer = call(dispatcher, "execute_confirmed_add_order_note", arguments, AGENT)
    assert (answer["code"], answer["action"]) == ("args_mismatch", "stop")
    assert world.ledger_amounts() == []


def test_declined_proposal_reads_declined_and_says_stop(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """After a person said no, the status is declined and the next step is to stop."""
    proposal_id = _request(dispatcher)["proposal_id"]
    world.reject(world.gate.proposal(AGENT, proposal_id))
    status = call(dispatcher, STATUS, {"proposal_id": proposal_id}, AGENT)
    assert status["status"] == "declined"
    assert "do not retry" in status["next_step"]


def test_unknown_outcome_is_never_a_failure_and_is_settled_by_lookup(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """Timeout after success: status unknown; executing again looks up, never refunds twice."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    first = _execute(dispatcher, proposal_id, token)
    assert (first["kind"], first["status"]) == ("execution", "unknown")
    assert "Never" in first["next_step"]
    settled = _execute(dispatcher, proposal_id, token)
    assert (settled["status"], settled["execution_id"]) == ("succeeded", first["execution_id"])
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_retryable_failure_is_retried_with_the_same_request_key(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """failed_retryable, then execute again: one execution, one refund, same request key."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.provider.fail_next(FaultMode.RETRYABLE)
    first = _execute(dispatcher, proposal_id, token)
    assert first["status"] == "failed_retryable"
    second = _execute(dispatcher, proposal_id, token)
    assert second["status"] == "succeeded"
    assert second["execution_id"] == first["execution_id"]
    assert second["receipt"]["request_key"] == world.provider.ledger("acme")[0].request_key
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_terminal_failure_says_do_not_retry(world: World, dispatcher: OpenAIDispatcher) -> None:
    """The provider refused: failed_terminal, and the next step is not to retry."""
    proposal_id, token = _confirmed(world, dispatcher)
    world.provider.fail_next(FaultMode.TERMINAL)
    answer = _execute(dispatcher, proposal_id, token)
    assert (answer["status"], answer["error_code"]) == ("failed_terminal", "provider_refused")
    assert "do not retry" in answer["next_step"]
    assert world.ledger_amounts() == []


def test_store_unavailable_says_check_status_later(
    world: World, dispatcher: OpenAIDispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No outcome known: store_unavailable → check_status, never a new proposal."""

    def down(*args: Any, **kwargs: Any) -> None:
        raise StoreUnavailable("database unreachable")

    monkeypatch.setattr(world.gate, "propose", down)
    answer = _request(dispatcher)
    assert (answer["code"], answer["action"]) == ("store_unavailable", "check_status")
    assert "Do not make a new proposal" in answer["next_step"]


def test_the_dispatcher_answers_text_for_the_tool_message(dispatcher: OpenAIDispatcher) -> None:
    """dispatch() returns the JSON string that becomes the tool message's content."""
    text = dispatcher.dispatch(REQUEST, '{"order_id": "ord_1001"}', AGENT)
    assert text.startswith('{"kind":"refusal"')
