"""Confirmation through elicitation: accept, decline and cancel are three outcomes, in both eras.

``auto`` negotiates 2026-07-28 (the question comes back as an input_required
result); ``legacy`` negotiates 2025-11-25 (the server asks the client
directly). The form is offered only where the policy allows in-band
confirmation; everything else gets the confirmation page.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitRequestFormParams, ElicitRequestURLParams

from signoff import (
    ApprovalPolicy,
    Principal,
    ProposalStatus,
    ResourceState,
    Risk,
    RiskLevel,
)
from signoff.demo._note_tool import AddOrderNote, NoteArgs, order_notes
from signoff.mcp_server import StaticIdentity, create_mcp_server
from tests.conftest import AGENT, REFUND, World
from tests.mcp.conftest import NOTE, PUBLIC_URL, Mode, Person, call, client

NOTE_REQUEST = "request_add_order_note_confirmation"
NOTE_EXECUTE = "execute_confirmed_add_order_note"
REFUND_REQUEST = "request_refund_order_confirmation"
ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


def _request(
    server: MCPServer, person: Person, mode: Mode, name: str = NOTE_REQUEST, args: Any = None
) -> dict[str, Any]:
    async def body() -> dict[str, Any]:
        async with client(server, person, mode=mode) as c:
            return await call(c, name, NOTE if args is None else args)

    return anyio.run(body)


@ERAS
def test_accept_confirms_as_the_person_and_hands_the_agent_its_token(
    world: World, server: MCPServer, mode: Mode
) -> None:
    """accept → a decision by the human principal (not the agent); then execute writes once."""
    person = Person("accept")
    answer = _request(server, person, mode)
    assert person.modes == ["form"]
    receipt = answer["confirmation"].pop("decision")
    assert answer["confirmation"] == {"channel": "form", "outcome": "accepted", "code": None}
    assert answer["status"] == "confirmed"
    proposal = world.gate.proposal(AGENT, answer["proposal_id"])
    [event] = [
        e
        for e in world.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    assert receipt == {
        "audit_id": f"acme:{event.seq}",
        "action_id": proposal.action_id,
        "status": "confirmed",
        "version": 2,
        "tool_status": "not_started",
        "duplicate": False,
    }
    [decision] = proposal.approvals
    assert (decision.approver, decision.step, decision.kind.value) == (
        "u_42",
        "requester",
        "approve",
    )
    assert order_notes(world.shop, "acme", "ord_1001") == []

    async def execute() -> dict[str, Any]:
        async with client(server, person, mode=mode) as c:
            arguments = {
                "proposal_id": answer["proposal_id"],
                "confirmation_token": answer["confirmation_token"],
            }
            return await call(c, NOTE_EXECUTE, arguments)

    executed = anyio.run(execute)
    assert executed["status"] == "succeeded"
    assert order_notes(world.shop, "acme", "ord_1001") == [NOTE["note"]]


@ERAS
def test_decline_declines_the_proposal(world: World, server: MCPServer, mode: Mode) -> None:
    """decline → declined (reason other), recorded as the person's decision; nothing written."""
    answer = _request(server, Person("decline"), mode)
    assert answer["confirmation"]["outcome"] == "declined"
    assert answer["confirmation"]["decision"]["status"] == "declined"
    assert answer["status"] == "declined"
    [decision] = world.gate.proposal(AGENT, answer["proposal_id"]).approvals
    assert (decision.approver, decision.kind.value, decision.reason_code) == (
        "u_42",
        "reject",
        "other",
    )
    assert order_notes(world.shop, "acme", "ord_1001") == []


@ERAS
def test_cancel_leaves_the_proposal_awaiting(world: World, server: MCPServer, mode: Mode) -> None:
    """cancel → no decision at all; the proposal stays awaiting confirmation."""
    answer = _request(server, Person("cancel"), mode)
    assert answer["confirmation"]["outcome"] == "cancelled"
    proposal = world.gate.proposal(AGENT, answer["proposal_id"])
    assert (proposal.status, proposal.approvals) == (ProposalStatus.AWAITING_CONFIRMATION, ())


@ERAS
def test_an_unticked_confirm_is_an_explicit_no(world: World, server: MCPServer, mode: Mode) -> None:
    """A submitted form with confirm false declines, it never approves."""
    answer = _request(server, Person("accept", confirm=False), mode)
    assert answer["status"] == "declined"


@ERAS
def test_an_answer_naming_another_digest_decides_nothing(
    world: World, server: MCPServer, mode: Mode
) -> None:
    """accept bound to a different proposal id or digest: refused, the proposal stays awaiting."""
    for tampered in ({"args_digest": "0" * 64}, {"proposal_id": "prop_other"}):
        answer = _request(server, Person("accept", content=tampered), mode)
        assert answer["confirmation"] == {
            "channel": "form",
            "outcome": "refused",
            "code": "args_mismatch",
        }
        proposal = world.gate.proposal(AGENT, answer["proposal_id"])
        assert (proposal.status, proposal.approvals) == (ProposalStatus.AWAITING_CONFIRMATION, ())


@ERAS
def test_a_refund_is_never_offered_as_a_form(world: World, server: MCPServer, mode: Mode) -> None:
    """The refund policy requires the page: an auto-accepting client only opens the URL."""
    person = Person("accept", "accept")
    answer = _request(server, person, mode, REFUND_REQUEST, REFUND)
    assert person.modes == ["url"]
    [asked] = person.seen
    assert isinstance(asked, ElicitRequestURLParams)
    assert asked.url == f"{PUBLIC_URL}/ui/proposals/{answer['proposal_id']}"
    assert answer["confirmation"] == {"channel": "url", "outcome": "opened", "code": None}
    assert answer["status"] == "awaiting_confirmation"
    assert world.gate.proposal(AGENT, answer["proposal_id"]).approvals == ()
    assert world.ledger_amounts() == []


@ERAS
@pytest.mark.parametrize(
    ("action", "outcome"), [("decline", "not_opened"), ("cancel", "dismissed")]
)
def test_url_answers_record_nothing(
    world: World, server: MCPServer, mode: Mode, action: Any, outcome: str
) -> None:
    """Declining or dismissing the page link is not a decision: the proposal stays awaiting."""
    answer = _request(server, Person(url=action), mode, REFUND_REQUEST, REFUND)
    assert answer["confirmation"]["outcome"] == outcome
    assert answer["status"] == "awaiting_confirmation"


def test_form_content_sent_to_a_url_question_is_ignored(world: World, server: MCPServer) -> None:
    """A client answering the page link with form-like content cannot confirm the refund."""
    forged = {"confirm": True, "proposal_id": "x", "args_digest": "y"}
    answer = _request(server, Person(url="accept", content=forged), "auto", REFUND_REQUEST, REFUND)
    assert answer["status"] == "awaiting_confirmation"
    assert world.gate.proposal(AGENT, answer["proposal_id"]).approvals == ()


class _RiskyNote(AddOrderNote):
    """A misdeclared tool: in-band policy, but high risk."""

    name = "risky_note"

    def risk(self, args: NoteArgs, state: ResourceState) -> Risk:
        return Risk(RiskLevel.HIGH, ("pretend this note is dangerous",))

    def policy(self, args: NoteArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(requester_confirms=True, in_band=True)


@ERAS
def test_a_high_risk_proposal_cannot_be_confirmed_by_form(world: World, mode: Mode) -> None:
    """Even a policy saying in_band gets the page when the risk is high: no form, no decision."""
    world.gate.catalog.register(_RiskyNote(world.shop))
    server = create_mcp_server(world.gate, StaticIdentity(AGENT, Principal("u_42", "acme")))
    person = Person("accept", "accept")
    answer = _request(server, person, mode, "request_risky_note_confirmation", NOTE)
    assert person.modes == ["url"]
    assert answer["status"] == "awaiting_confirmation"
    assert world.gate.proposal(AGENT, answer["proposal_id"]).approvals == ()


def test_without_a_person_in_the_session_there_is_no_form(world: World) -> None:
    """An identity with no human (as over HTTP) sends even the in-band tool to the page."""
    server = create_mcp_server(world.gate, StaticIdentity(AGENT))
    person = Person("accept", "accept")
    answer = _request(server, person, "auto")
    assert person.modes == ["url"]
    assert answer["status"] == "awaiting_confirmation"


def test_the_form_shows_the_preview_and_binds_id_and_digest(
    world: World, server: MCPServer
) -> None:
    """The message carries the preview; the schema pins the proposal id and digest shown."""
    person = Person("cancel")
    answer = _request(server, person, "auto")
    [form] = person.seen
    assert isinstance(form, ElicitRequestFormParams)
    assert "Add a note to order ord_1001" in form.message
    assert NOTE["note"] in form.message
    properties = form.requested_schema["properties"]
    assert properties["proposal_id"]["enum"] == [answer["proposal_id"]]
    assert properties["args_digest"]["enum"] == [answer["args_digest"]]
    assert set(form.requested_schema["required"]) == {"confirm", "proposal_id", "args_digest"}


def test_an_expired_proposal_cannot_be_accepted_late(world: World, server: MCPServer) -> None:
    """The person answers after the window closed: refused as expired, nothing confirmed."""

    class SlowPerson(Person):
        async def __call__(self, context: Any, params: Any) -> Any:
            world.clock.advance(timedelta(minutes=11))
            return await super().__call__(context, params)

    answer = _request(server, SlowPerson("accept"), "auto")
    assert answer["confirmation"]["code"] == "preview_expired"
    assert answer["status"] == "expired"


def test_the_human_principal_is_never_an_agent() -> None:
    """A StaticIdentity refuses an agent as the in-band human, and a person as the agent."""
    with pytest.raises(ValueError, match="person"):
        StaticIdentity(AGENT, AGENT)
    with pytest.raises(ValueError, match="actor"):
        StaticIdentity(Principal("u_42", "acme"))


def test_the_in_band_prompt_shows_agent_text_one_line_per_field(
    world: World, server: MCPServer
) -> None:
    """A note with a line break and a bidi override cannot add or fake a line of the prompt."""
    forged = "fine\nConfirm: Refund ¥0.01 on order ord_1001\u202etxt.exe"
    person = Person("cancel")
    _request(server, person, "auto", args={**NOTE, "note": forged})
    [form] = person.seen
    assert isinstance(form, ElicitRequestFormParams)
    assert "\u202e" not in form.message and "⟨U+202E⟩" in form.message
    assert "fine⟨U+000A⟩Confirm: Refund ¥0.01" in form.message
    assert not any(line.startswith("Confirm: Refund") for line in form.message.splitlines())
