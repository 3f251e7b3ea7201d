"""`signoff mcp --demo` as a subprocess, driven by the real MCP client over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from signoff import Decision, DecisionKind, Gate, SQLiteStore
from signoff.demo import DemoShop, RefundProvider, demo_catalog
from signoff.demo._note_tool import order_notes
from signoff.http._settings import DEMO_TOKEN_KEY
from tests.conftest import APPROVER, REFUND
from tests.mcp.conftest import NOTE, Person, call
from tests.serving import clean_env


def _server(db: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "signoff", "mcp", "--db", str(db), "--demo", "--principal", "u_42@acme"],
        cwd=str(db.parent),
    )


def test_stdio_server_requests_executes_and_confirms_in_band(tmp_path: Path) -> None:
    """Over stdio: refund via the page (approved here), note via the form; ledger and notes."""
    db = tmp_path / "signoff.db"
    person = Person("accept", "accept")

    async def body() -> dict[str, Any]:
        async with Client(_server(db), elicitation_callback=person) as c:
            names = [tool.name for tool in (await c.list_tools()).tools]
            assert names[-2:] == ["get_proposal_status", "get_mandate_status"]
            assert len(names) == 8
            requested = await call(c, "request_refund_order_confirmation", REFUND)
            assert requested["confirmation"]["channel"] == "url"
            _approve_elsewhere(db, requested["proposal_id"])
            status = await call(c, "get_proposal_status", {"proposal_id": requested["proposal_id"]})
            arguments = {
                "proposal_id": requested["proposal_id"],
                "confirmation_token": status["confirmation_token"],
            }
            executed = await call(c, "execute_confirmed_refund_order", arguments)
            replayed = await call(c, "execute_confirmed_refund_order", arguments)
            assert replayed["code"] == "already_consumed"
            note = await call(c, "request_add_order_note_confirmation", NOTE)
            assert note["confirmation"]["outcome"] == "accepted"
            arguments = {
                "proposal_id": note["proposal_id"],
                "confirmation_token": note["confirmation_token"],
            }
            assert (await call(c, "execute_confirmed_add_order_note", arguments))["status"] == (
                "succeeded"
            )
            return executed

    executed = anyio.run(body)
    assert executed["status"] == "succeeded"
    assert executed["receipt"]["approvers"] == ["alice"]
    shop = DemoShop(f"{db}.shop.sqlite")
    try:
        ledger = RefundProvider(shop).ledger("acme")
        assert [(e.order_id, e.amount_minor) for e in ledger] == [("ord_1001", 19900)]
        assert ledger[0].reference == executed["receipt"]["provider_reference"]
        assert order_notes(shop, "acme", "ord_1001") == [NOTE["note"]]
    finally:
        shop.close()


def _approve_elsewhere(db: Path, proposal_id: str) -> None:
    """alice approves from another process's gate on the same database (as `signoff serve`)."""
    store = SQLiteStore(db)
    shop = DemoShop(f"{db}.shop.sqlite")
    try:
        gate = Gate(demo_catalog(shop), store, token_key=DEMO_TOKEN_KEY)
        proposal = gate.proposal(APPROVER, proposal_id)
        gate.decide(
            APPROVER,
            proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="stdio-approve",
        )
    finally:
        store.close()
        shop.close()


def test_stdio_confirm_url_names_where_serve_really_answers(tmp_path: Path) -> None:
    """`signoff mcp` links the page at SIGNOFF_PORT (or SIGNOFF_PUBLIC_URL), not a fixed
    http://127.0.0.1:8000: the same settings `signoff serve` reads."""
    db = tmp_path / "signoff.db"

    async def confirm_url(env: dict[str, str]) -> str:
        server = _server(db)
        server.env = {**clean_env(), **env}
        async with Client(server) as c:
            requested = await call(c, "request_refund_order_confirmation", REFUND)
            return str(requested["confirm_url"])

    on_port = anyio.run(confirm_url, {"SIGNOFF_PORT": "8123"})
    assert on_port.startswith("http://127.0.0.1:8123/ui/proposals/prop_"), on_port
    public = anyio.run(confirm_url, {"SIGNOFF_PUBLIC_URL": "https://signoff.example.com"})
    assert public.startswith("https://signoff.example.com/ui/proposals/prop_"), public
