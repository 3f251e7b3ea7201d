"""A tool whose execute answers a bare value: refused at registration when it says so, and
at run time an ``unknown`` execution naming the broken contract — never a 503, never
``running`` (issue 24, item 1)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from signoff import (
    Catalog,
    Decision,
    DecisionKind,
    ExecutionStatus,
    Gate,
    LookupOutcome,
    NotFoundAtProvider,
    Preview,
    PreviewField,
    ResourceState,
    SideEffect,
    StrictArgs,
    Succeeded,
    WriteTool,
)
from signoff.exceptions import CatalogError
from tests.conftest import AGENT, APPROVER, TOKEN_KEY, World
from tests.http.conftest import Api, auth, make_app


class EmailArgs(StrictArgs):
    to: str
    subject: str


class Mailbox:
    """The stand-in mail provider: what it accepted, by request key."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def send(self, request_key: str, to: str) -> None:
        if all(key != request_key for key, _ in self.sent):
            self.sent.append((request_key, to))


class SendEmail(WriteTool[EmailArgs]):
    name = "send_email"
    description = "Send an e-mail."
    side_effect = SideEffect.EXTERNAL
    approver_role = "refund_approver"

    def __init__(self, mailbox: Mailbox) -> None:
        self.mailbox = mailbox

    def preview(self, args: EmailArgs, state: ResourceState) -> Preview:
        return Preview("Send", "Send an e-mail", (PreviewField("to", "To", args.to),), "", "")

    # Annotated `Any` (accepted), yet the body answers a string after the mail went out.
    def execute(self, args: EmailArgs, request_key: str, expected: ResourceState) -> Any:
        self.mailbox.send(request_key, args.to)
        return "sent"

    def lookup(self, request_key: str) -> LookupOutcome:
        if any(key == request_key for key, _ in self.mailbox.sent):
            return Succeeded(request_key)
        return NotFoundAtProvider()


class Unannotated(SendEmail):
    def execute(self, args, request_key, expected):  # type: ignore[no-untyped-def]
        return "sent"


class UnannotatedLookup(SendEmail):
    def lookup(self, request_key):  # type: ignore[no-untyped-def]
        return "found"


class LookupAnswersAString(SendEmail):
    def lookup(self, request_key: str) -> Any:
        return "found"


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            Unannotated,
            "tool 'send_email': execute has no return annotation; write def execute(self, args, "
            "request_key, expected) -> Succeeded | RetryableFailure | TerminalFailure",
        ),
        (
            UnannotatedLookup,
            "tool 'send_email': lookup has no return annotation; write def lookup(self, "
            "request_key) -> Succeeded | TerminalFailure | Pending | NotFoundAtProvider",
        ),
    ],
)
def test_an_unannotated_execute_or_lookup_is_refused(tool: type[SendEmail], message: str) -> None:
    """One line naming the tool, the hook and the annotation to write."""
    with pytest.raises(CatalogError) as caught:
        Catalog([tool(Mailbox())])
    assert str(caught.value) == message


def test_a_class_instead_of_an_instance_says_so() -> None:
    """`Catalog([SendEmail])` asks for `SendEmail()`, not for a different normalize()."""
    with pytest.raises(CatalogError) as caught:
        Catalog([SendEmail])  # type: ignore[list-item]
    assert str(caught.value) == (
        "SendEmail is a class; register an instance of it: Catalog([SendEmail(...)])"
    )


def gate_with(world: World, tool: SendEmail) -> Gate:
    return Gate(
        Catalog([tool]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
    )


def approved(gate: Gate) -> tuple[str, str]:
    proposal = gate.propose(AGENT, "send_email", {"to": "ana@example.com", "subject": "Hi"})
    decided = gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="d1",
    )
    assert decided.confirmation_token is not None
    return proposal.proposal_id, decided.confirmation_token


def test_a_bare_return_ends_the_attempt_unknown_in_process(world: World) -> None:
    """The e-mail went once; the execution is `unknown` with tool_contract_violation, the
    tool named; a retry looks the key up (succeeded) and never sends again."""
    mailbox = Mailbox()
    gate = gate_with(world, SendEmail(mailbox))
    proposal_id, token = approved(gate)
    result = gate.execute(AGENT, proposal_id, token)
    execution = result.execution
    assert execution.status is ExecutionStatus.UNKNOWN
    assert execution.error_code == "tool_contract_violation"
    assert execution.error_message is not None
    assert "tool 'send_email': execute returned str, not Succeeded" in execution.error_message
    assert len(mailbox.sent) == 1
    settled = gate.retry(AGENT, execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert len(mailbox.sent) == 1


def test_a_bare_lookup_answer_keeps_it_unknown_and_says_why(world: World) -> None:
    """A lookup answering a string is recorded as the contract violation, not as 'no answer'."""
    mailbox = Mailbox()
    gate = gate_with(world, LookupAnswersAString(mailbox))
    proposal_id, token = approved(gate)
    first = gate.execute(AGENT, proposal_id, token).execution
    again = gate.retry(AGENT, first.execution_id).execution
    assert again.status is ExecutionStatus.UNKNOWN
    assert again.error_code == "tool_contract_violation"
    assert "lookup returned str" in (again.error_message or "")
    assert len(mailbox.sent) == 1


def test_a_bare_return_over_http_is_an_unknown_execution_not_a_503(world: World) -> None:
    """202 with the execution `unknown` and the code; a read shows the same; sent once."""
    mailbox = Mailbox()
    gate = gate_with(world, SendEmail(mailbox))
    with TestClient(make_app(world, gate=gate)) as client:
        api = Api(client.app, client, world)  # type: ignore[arg-type]
        proposal = client.post(
            "/v1/proposals",
            json={"tool": "send_email", "arguments": {"to": "ana@example.com", "subject": "Hi"}},
            headers=auth(AGENT),
        ).json()
        token = api.approve(proposal)
        response = api.execute(proposal["proposal_id"], token)
        assert response.status_code == 202, response.text
        execution = response.json()["execution"]
        assert execution["status"] == "unknown"
        assert execution["error_code"] == "tool_contract_violation"
        assert "'send_email'" in execution["error_message"]
        assert response.headers["location"] == f"/v1/executions/{execution['execution_id']}"
        read = client.get(response.headers["location"], headers=auth(AGENT)).json()
        assert read["execution"]["status"] == "unknown"
        assert read["execution"]["error_code"] == "tool_contract_violation"
    assert len(mailbox.sent) == 1
