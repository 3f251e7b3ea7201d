"""signoff.client over a real uvicorn server in a thread: typed views, typed errors."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import uvicorn

from signoff import exceptions
from signoff.client import SignoffClient, error_from_problem
from tests.conftest import AGENT, APPROVER, REFUND, World
from tests.http.conftest import make_app, token_for


@pytest.fixture
def base_url(world: World) -> Iterator[str]:
    config = uvicorn.Config(make_app(world), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_walkthrough_with_the_client(base_url: str, world: World) -> None:
    """Propose, approve twice with one key, execute, read, and the token refused again."""
    with SignoffClient(base_url, token_for(AGENT)) as agent:
        approver = agent.as_caller(token_for(APPROVER))
        assert agent.whoami().act == "agent:support-bot"
        proposal = agent.propose("refund_order", REFUND, rationale="damaged on arrival")
        assert proposal.preview.title == "Refund ¥199.00 on order ord_1001"
        first = approver.approve(proposal, idempotency_key="approve-1")
        again = approver.approve(proposal, idempotency_key="approve-1")
        assert (first.duplicate, again.duplicate) == (False, True)
        assert again.proposal.action_id == first.proposal.action_id
        assert (first.status, first.version, first.tool_status) == ("confirmed", 2, "not_started")
        assert (again.audit_id, again.action_id) == (first.audit_id, proposal.action_id)
        token = agent.confirmation_token(proposal.proposal_id)
        outcome = agent.execute(proposal.proposal_id, token)
        assert outcome.execution.status == "succeeded"
        assert outcome.receipt is not None
        assert agent.execution(outcome.execution.execution_id).receipt == outcome.receipt
        with pytest.raises(exceptions.AlreadyConsumed) as refused:
            agent.execute(proposal.proposal_id, token)
        assert refused.value.details["execution_id"] == outcome.execution.execution_id
        assert [(e.order_id, e.amount_minor) for e in agent.demo_ledger()] == [("ord_1001", 19900)]
        assert agent.demo_order("ord_1001").refunded_minor == 19900
        assert [p.status for p in agent.proposals(status=["succeeded"])] == ["succeeded"]
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_errors_are_the_servers_typed_exceptions(base_url: str) -> None:
    """Each problem code comes back as its exception class, with the problem's details."""
    with SignoffClient(base_url, token_for(AGENT)) as agent:
        with pytest.raises(exceptions.ClarificationNeeded) as clarify:
            agent.propose("refund_order", {**REFUND, "currency": None})
        assert clarify.value.details["field"] == "currency"
        with pytest.raises(exceptions.NotFound):
            agent.proposal("prop_guess")
        proposal = agent.propose("refund_order", REFUND)
        with pytest.raises(exceptions.SeparationOfDuties):
            agent.approve(proposal)
        with pytest.raises(exceptions.NotEntitled):
            agent.audit()
    with (
        SignoffClient(base_url, "not-a-jwt") as stranger,
        pytest.raises(exceptions.NotAuthenticated),
    ):
        stranger.whoami()


def test_no_answer_is_outcome_unknown() -> None:
    """A server that never answers: OutcomeUnknown after retrying with the same key."""
    keys: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        keys.append(request.headers.get("Idempotency-Key"))
        raise httpx.ReadTimeout("no answer", request=request)

    http = httpx.Client(base_url="http://signoff.test", transport=httpx.MockTransport(handler))
    client = SignoffClient("http://signoff.test", "t", retries=2, http=http)
    with pytest.raises(exceptions.OutcomeUnknown):
        client.execute("prop_1", "sot_x", idempotency_key="exec-1")
    assert keys == ["exec-1"] * 3


def test_unknown_codes_fall_back_to_the_status_class() -> None:
    """A code this client does not know maps by HTTP status."""
    error = error_from_problem(409, {"code": "brand_new_conflict", "detail": "d", "id": "x"})
    assert isinstance(error, exceptions.Conflict)
    assert error.details == {"http_status": 409, "problem_code": "brand_new_conflict", "id": "x"}
