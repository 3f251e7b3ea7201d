"""A server built from its settings on either store, as the red team of issue 23 ran it.

`serve()` builds the app exactly as `signoff serve` does (its own store, role directory,
approval surfaces, the confirmation pages) over SQLite or a fresh PostgreSQL schema, and
`Served` drives it as a script would: bearer tokens per principal, the page's forms, and
the external effects to check (the shop's rows, the provider's ledger, the audit).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from signoff import Principal
from signoff.demo._note_tool import order_notes
from signoff.http import Settings, create_app, mint_dev_token
from signoff.http._state import AppState
from signoff.identity import StoreRoleDirectory
from signoff.web import include_ui
from tests.conftest import AGENT, REFUND
from tests.pg import fresh_schema
from tests.web.conftest import BASE, hidden_fields

STORES = ("sqlite", "postgres")
SAM = Principal("sam", "acme", frozenset({"support"}))
"""Support staff: may ask for notes and refunds on other customers' orders."""
SAMS_AGENT = Principal("sam", "acme", frozenset({"support"}), actor="agent:support-bot")


def post_json(client: TestClient, url: str, body: Any, headers: dict[str, str]) -> Any:
    """POST ``body`` as JSON with every non-ASCII character escaped (a lone surrogate too,
    which an HTTP client's UTF-8 encoder refuses), as any JSON encoder may send it."""
    return client.post(
        url,
        content=json.dumps(body).encode(),
        headers={**headers, "Content-Type": "application/json"},
    )


@dataclass
class Served:
    client: TestClient
    settings: Settings

    @property
    def state(self) -> AppState:
        state: AppState = self.client.app.state.signoff  # type: ignore[attr-defined]
        return state

    @property
    def directory(self) -> StoreRoleDirectory:
        directory = self.state.gate.directory
        assert isinstance(directory, StoreRoleDirectory)
        return directory

    def token(self, who: Principal, *, client: str | None = None) -> str:
        return mint_dev_token(
            self.settings,
            subject=who.subject,
            tenant=who.tenant,
            roles=sorted(who.roles),
            actor=who.actor,
            client=client,
            now=datetime.now(UTC),
        )

    def auth(
        self, who: Principal, key: str | None = None, *, client: str | None = None
    ) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {self.token(who, client=client)}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        return headers

    def propose(self, tool: str = "refund_order", by: Principal = AGENT, **arguments: Any) -> Any:
        args = {**REFUND, **arguments} if tool == "refund_order" else arguments
        body = {"tool": tool, "arguments": args}
        return post_json(self.client, "/v1/proposals", body, self.auth(by))

    def proposed(self, tool: str = "refund_order", by: Principal = AGENT, **args: Any) -> Any:
        response = self.propose(tool, by, **args)
        assert response.status_code == 201, response.text
        return response.json()

    def decide(
        self, proposal: dict[str, Any], by: Principal, *, client: str | None = None, **body: Any
    ) -> Any:
        payload = {"decision": "approve", "expected_version": proposal["version"], **body}
        return post_json(
            self.client,
            f"/v1/proposals/{proposal['proposal_id']}/decision",
            payload,
            self.auth(by, uuid.uuid4().hex, client=client),
        )

    def pick_up(self, proposal: dict[str, Any], by: Principal = AGENT) -> Any:
        path = f"/v1/proposals/{proposal['proposal_id']}/confirmation-token"
        return self.client.get(path, headers=self.auth(by))

    def execute(self, proposal: dict[str, Any], token: str, by: Principal = AGENT) -> Any:
        body = {"proposal_id": proposal["proposal_id"], "confirmation_token": token}
        return self.client.post(
            "/v1/executions", json=body, headers=self.auth(by, uuid.uuid4().hex)
        )

    def notes(self, order_id: str = "ord_1001") -> list[str]:
        assert self.state.demo is not None
        return order_notes(self.state.demo.shop, "acme", order_id)

    def ledger(self) -> list[Any]:
        assert self.state.demo is not None
        return list(self.state.demo.provider.ledger("acme"))

    def audit(self, kind: str | None = None) -> list[Any]:
        with self.state.gate.store.read() as tx:
            events = tx.audit_events(tenant="acme")
        return [e for e in events if kind is None or e.kind == kind]

    def sign_in_demo(self, who: str) -> Any:
        fields = hidden_fields(self.client.get("/ui/sign-in").text)
        return self.client.post(
            "/ui/sign-in/demo", data={**fields, "user": who}, follow_redirects=False
        )

    def decide_on_page(self, proposal: dict[str, Any], decision: str = "approve") -> Any:
        page = self.client.get(f"/ui/proposals/{proposal['proposal_id']}")
        assert page.status_code == 200, page.text
        form = {**hidden_fields(page.text, decision), "decision": decision}
        return self.client.post(
            f"/ui/proposals/{proposal['proposal_id']}/decision", data=form, follow_redirects=False
        )


@contextmanager
def database(store: str, tmp_path: Path) -> Iterator[str]:
    if store == "sqlite":
        yield str(tmp_path / "signoff.db")
        return
    with fresh_schema("redteam") as url:
        yield url


@contextmanager
def serve(store: str, tmp_path: Path, **settings: Any) -> Iterator[Served]:
    """A demo server on ``store`` ("sqlite" or "postgres") with the given settings."""
    with database(store, tmp_path) as url:
        values: dict[str, Any] = {"demo": True, "reconcile_interval_seconds": 0, **settings}
        built = Settings(database_url=url, **values)
        app = create_app(built, extras=[include_ui])
        with TestClient(app, base_url=BASE) as client:
            yield Served(client, built)


def sign_in_with_token(served: Served, token: str) -> Any:
    fields = hidden_fields(served.client.get("/ui/sign-in").text)
    return served.client.post(
        "/ui/sign-in", data={**fields, "token": token}, follow_redirects=False
    )
