"""Issue 10's findings, tried again where they were found: a server built from its settings.

`create_app(Settings(...))` builds the gate exactly as `signoff serve` does (its own
store, the role directory, the approval surfaces), with the confirmation pages.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.cli._main import cli
from signoff.http import Settings, create_app, mint_dev_token
from signoff.web import include_ui
from tests.conftest import AGENT, APPROVER, REFUND
from tests.http.conftest import assert_problem
from tests.web.conftest import BASE, hidden_fields

OTHER_CUSTOMERS_AGENT = Principal("u_77", "acme", actor="agent:support-bot")
ADMIN = Principal("olga", "acme", frozenset({"signoff_admin"}))


@dataclass
class Server:
    client: TestClient
    settings: Settings
    db: str

    def auth(
        self, who: Principal, key: str | None = None, client: str | None = None
    ) -> dict[str, str]:
        token = mint_dev_token(
            self.settings,
            subject=who.subject,
            tenant=who.tenant,
            roles=sorted(who.roles),
            actor=who.actor,
            client=client,
            now=datetime.now(UTC),
        )
        headers = {"Authorization": f"Bearer {token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return headers

    def propose(self, order_id: str = "ord_1001", by: Principal = AGENT) -> dict[str, Any]:
        body = {"tool": "refund_order", "arguments": {**REFUND, "order_id": order_id}}
        response = self.client.post("/v1/proposals", json=body, headers=self.auth(by))
        assert response.status_code == 201, response.text
        return response.json()  # type: ignore[no-any-return]

    def decide(self, proposal: dict[str, Any], by: Principal = APPROVER, **kw: Any) -> Any:
        body = {"decision": "approve", "expected_version": proposal["version"]}
        return self.client.post(
            f"/v1/proposals/{proposal['proposal_id']}/decision",
            json=body,
            headers=self.auth(by, uuid.uuid4().hex, **kw),
        )

    def token(self, proposal: dict[str, Any]) -> str:
        path = f"/v1/proposals/{proposal['proposal_id']}/confirmation-token"
        return str(self.client.get(path, headers=self.auth(AGENT)).json()["confirmation_token"])

    def execute(self, proposal: dict[str, Any], token: str) -> Any:
        body = {"proposal_id": proposal["proposal_id"], "confirmation_token": token}
        return self.client.post(
            "/v1/executions", json=body, headers=self.auth(AGENT, uuid.uuid4().hex)
        )

    def ledger(self) -> list[Any]:
        response = self.client.get("/v1/demo/provider/ledger", headers=self.auth(AGENT))
        return response.json()["entries"]  # type: ignore[no-any-return]

    def roles_cli(self, *args: str) -> str:
        result = CliRunner().invoke(cli, ["roles", *args, "--db", self.db])
        assert result.exit_code == 0, result.output
        return result.output

    def sign_in_page(self, who: str) -> None:
        page = self.client.get("/ui/sign-in")
        fields = hidden_fields(page.text)
        response = self.client.post(
            "/ui/sign-in/demo", data={**fields, "user": who}, follow_redirects=False
        )
        assert response.status_code == 303, response.text

    def approve_on_page(self, proposal: dict[str, Any]) -> Any:
        page = self.client.get(f"/ui/proposals/{proposal['proposal_id']}")
        assert page.status_code == 200, page.text
        form = {**hidden_fields(page.text, "approve"), "decision": "approve"}
        return self.client.post(
            f"/ui/proposals/{proposal['proposal_id']}/decision", data=form, follow_redirects=False
        )


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    db = str(tmp_path / "signoff.db")
    settings = Settings(demo=True, database_url=db, reconcile_interval_seconds=0)
    app = create_app(settings, extras=[include_ui])
    with TestClient(app, base_url=BASE) as client:
        yield Server(client, settings, db)


def test_a_role_removed_in_the_directory_stops_the_page_session_and_the_execution(
    server: Server,
) -> None:
    """alice approved on the page; her role goes; her session can't approve, the agent can't run."""
    approved, waiting = server.propose("ord_1001"), server.propose("ord_1002")
    server.sign_in_page("alice")
    assert server.approve_on_page(approved).status_code == 303
    token = server.token(approved)
    assert "revoked" in server.roles_cli(
        "revoke", "--tenant", "acme", "--sub", "alice", "--role", "refund_approver"
    )
    page = server.client.get(f"/ui/proposals/{waiting['proposal_id']}")
    assert page.status_code == 404  # no longer in the circle of what she may decide
    refused = server.decide(waiting)
    assert_problem(refused, 409, "approver_revoked")
    assert_problem(server.execute(approved, token), 409, "approver_revoked")
    assert server.ledger() == []
    server.roles_cli("grant", "--tenant", "acme", "--sub", "alice", "--role", "refund_approver")
    assert server.execute(approved, token).status_code == 200
    assert len(server.ledger()) == 1


def test_the_admin_api_manages_the_directory_and_is_audited(server: Server) -> None:
    proposal = server.propose()
    assert_problem(
        server.client.delete("/v1/roles/alice/refund_approver", headers=server.auth(APPROVER)),
        403,
        "forbidden",
    )
    revoked = server.client.delete("/v1/roles/alice/refund_approver", headers=server.auth(ADMIN))
    assert revoked.status_code == 204
    assert_problem(server.decide(proposal), 409, "approver_revoked")
    listed = server.client.get("/v1/roles", headers=server.auth(ADMIN)).json()
    assert listed["mode"] == "revocations"
    assert [(g["subject"], g["status"], g["changed_by"]) for g in listed["grants"]] == [
        ("alice", "revoked", "olga")
    ]
    assert (
        server.client.put("/v1/roles/alice/refund_approver", headers=server.auth(ADMIN)).status_code
        == 204
    )
    assert server.decide(proposal).status_code == 200
    auditor = Principal("dave", "acme", frozenset({"auditor"}))
    kinds = [
        e["kind"]
        for e in server.client.get("/v1/audit", headers=server.auth(auditor)).json()["events"]
    ]
    assert kinds.count("role.revoked") == kinds.count("role.granted") == 1


def test_another_customers_agent_reads_nothing(server: Server) -> None:
    """u_77's agent guesses u_42's ids: 404 everywhere, and the list leaves them out."""
    proposal = server.propose()
    server.decide(proposal)
    executed = server.execute(proposal, server.token(proposal)).json()
    execution_id = executed["execution"]["execution_id"]
    spy = server.auth(OTHER_CUSTOMERS_AGENT)
    for path in (
        f"/v1/proposals/{proposal['proposal_id']}",
        f"/v1/executions/{execution_id}",
        f"/v1/proposals/{proposal['proposal_id']}/confirmation-token",
    ):
        assert_problem(server.client.get(path, headers=spy), 404, "not_found")
    assert server.client.get("/v1/proposals", headers=spy).json()["proposals"] == []
    mine = server.client.get("/v1/proposals", headers=server.auth(AGENT)).json()["proposals"]
    assert [p["proposal_id"] for p in mine] == [proposal["proposal_id"]]


def test_an_agent_replaying_its_persons_decision_key_gets_no_token(server: Server) -> None:
    """Keys are scoped to (tenant, person, agent): alice's key is not her agent's, and her
    agent is not in the circle of u_42's request (agents never decide)."""
    proposal = server.propose()
    key = "alice-click-1"
    body = {"decision": "approve", "expected_version": proposal["version"]}
    path = f"/v1/proposals/{proposal['proposal_id']}/decision"
    assert (
        server.client.post(path, json=body, headers=server.auth(APPROVER, key)).status_code == 200
    )
    alices_agent = Principal("alice", "acme", frozenset({"refund_approver"}), actor="agent:x")
    replay = server.client.post(path, json=body, headers=server.auth(alices_agent, key))
    assert_problem(replay, 404, "not_found")
    assert "sot_" not in replay.text
    again = server.client.post(path, json=body, headers=server.auth(APPROVER, key))
    assert again.json()["duplicate"] is True and "sot_" not in again.text


def test_decisions_from_an_unlisted_client_system_are_refused(server: Server) -> None:
    """The demo lists the page, jdk8-crm, in-band MCP and tokens naming no client."""
    first, second, third = (
        server.propose("ord_1001"),
        server.propose("ord_1002"),
        server.propose("ord_1003"),
    )
    assert_problem(server.decide(first, client="other-app"), 403, "surface_not_allowed")
    assert server.decide(second, client="jdk8-crm").status_code == 200
    assert server.decide(third).status_code == 200


def test_executing_after_the_state_moved_is_409_state_changed(server: Server) -> None:
    """A second full refund of an order refunded meanwhile: 409 state_changed, not 400."""
    first, second = server.propose(), server.propose()
    server.decide(first)
    server.decide(second)
    first_token, second_token = server.token(first), server.token(second)
    assert server.execute(first, first_token).status_code == 200
    body = assert_problem(server.execute(second, second_token), 409, "state_changed")
    assert "refund" in body["detail"]
    assert len(server.ledger()) == 1


def test_an_executed_proposal_page_reads_no_state(server: Server) -> None:
    proposal = server.propose()
    server.decide(proposal)
    server.execute(proposal, server.token(proposal))
    server.sign_in_page("alice")
    page = server.client.get(f"/ui/proposals/{proposal['proposal_id']}")
    assert page.status_code == 200
    assert "could not be read now" not in page.text
    assert "Business state when the agent asked" in page.text
