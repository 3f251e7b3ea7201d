"""Issue 23: text no store can keep is refused (400) before anything, on both stores alike.

On PostgreSQL a NUL in `rationale`, a reject `reason`, a stop `reason`, a
`provider_reference` or an id in a path answered 503 "outcome unknown" with
`Retry-After` — though nothing was stored — while SQLite answered 201/404. The 5xx log
line wrote the decoded path raw, so a crafted path forged a log line with an ANSI escape.
Then a property: arbitrary text (NUL, controls, lone surrogates) in every text field of
the API, on both stores, is never a 5xx.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import structlog
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signoff._logging import logging_config
from tests.conftest import AGENT, APPROVER
from tests.http.conftest import assert_problem
from tests.redteam import STORES, Served, post_json, serve

ADMIN = APPROVER.__class__("olga", "acme", frozenset({"signoff_admin"}))


@pytest.fixture(params=STORES)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    with serve(request.param, tmp_path) as server:
        yield server


def _rows(served: Served) -> tuple[int, ...]:
    with served.state.gate.store.read() as tx:
        return tuple(
            int(tx.run(f"SELECT count(*) FROM {table}", ()).fetchone()[0])
            for table in ("proposals", "decisions", "executions", "audit_events")
        )


def test_a_nul_in_any_stored_text_is_400_and_nothing_happens(served: Served) -> None:
    proposal = served.proposed()
    before = _rows(served)
    pid = proposal["proposal_id"]
    body: dict[str, Any] = {
        "tool": "refund_order",
        "arguments": {
            "order_id": "ord_1002",
            "amount_minor": 100,
            "currency": "CNY",
            "reason": "ok",
        },
        "rationale": "because\x00",
    }
    attempts = [
        served.client.post("/v1/proposals", json=body, headers=served.auth(AGENT)),
        served.client.post(
            "/v1/proposals",
            json={**body, "rationale": None, "arguments": {**body["arguments"], "reason": "\x00"}},
            headers=served.auth(AGENT),
        ),
        served.decide(proposal, APPROVER, decision="reject", reason_code="other", reason="no\x00"),
        served.client.post(
            "/v1/executions/exe_1/stop", json={"reason": "\x00"}, headers=served.auth(APPROVER)
        ),
        served.client.post(
            "/v1/executions/exe_1/resolution",
            json={"outcome": "succeeded", "provider_reference": "re\x00f", "reason": "seen"},
            headers=served.auth(ADMIN),
        ),
        post_json(
            served.client,
            f"/v1/proposals/{pid}/revoke",
            {"reason": "\ud800"},
            served.auth(APPROVER),
        ),
        served.client.get(f"/v1/proposals/{quote(pid + chr(0))}", headers=served.auth(AGENT)),
        served.client.get("/v1/executions/exe%00", headers=served.auth(AGENT)),
        served.client.get("/v1/inbox?after=1.prop%00", headers=served.auth(APPROVER)),
    ]
    for response in attempts:
        assert_problem(response, 400, "invalid_request")
        assert "retry-after" not in response.headers
    assert _rows(served) == before
    assert served.ledger() == []


def test_the_same_request_stores_alike_without_the_nul(served: Served) -> None:
    """The refusal is about the NUL alone: the same text without it is stored as given."""
    body = {
        "tool": "refund_order",
        "arguments": {
            "order_id": "ord_1002",
            "amount_minor": 100,
            "currency": "CNY",
            "reason": "ok",
        },
        "rationale": "because \u202e\x1b[31m",
    }
    response = served.client.post("/v1/proposals", json=body, headers=served.auth(AGENT))
    assert response.status_code == 201, response.text
    assert response.json()["untrusted_rationale"] == "because \u202e\x1b[31m"


def test_an_absurd_inbox_cursor_is_a_400_problem(served: Served) -> None:
    for after in ("99999999999999999999.x", "999999999999999999999999999.x", "²³.x"):
        response = served.client.get(f"/v1/inbox?after={after}", headers=served.auth(APPROVER))
        assert_problem(response, 400, "invalid_request")


def test_json_with_a_key_twice_is_refused(served: Served) -> None:
    raw = (
        b'{"tool": "refund_order", "tool": "refund_order", "arguments": {"order_id": '
        b'"ord_1001", "amount_minor": 1, "amount_minor": 19900, "currency": "CNY"}}'
    )
    response = served.client.post(
        "/v1/proposals",
        content=raw,
        headers={**served.auth(AGENT), "Content-Type": "application/json"},
    )
    body = assert_problem(response, 400, "invalid_request")
    assert "twice" in body["detail"]
    assert _rows(served)[0] == 0


def test_a_log_line_escapes_control_characters_in_request_data() -> None:
    """The 5xx line names the decoded path: an ANSI escape and a line break stay inert."""
    config = logging_config("info", "text")["formatters"]["signoff"]
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=config["foreign_pre_chain"], processors=config["processors"]
    )
    forged = "/v1/x\x1b[32m\n2026-01-01 [info     ] audit ok\u202e"
    record = logging.LogRecord(
        "signoff", logging.ERROR, __file__, 1, "unexpected error on %s %s", ("GET", forged), None
    )
    line = formatter.format(record)
    assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
    assert "\\x1b[32m\\x0a2026-01-01" in line


# -- arbitrary text in every text field, both stores: never a 5xx -------------------------

SPECIAL = st.sampled_from(["\x00", "\ud800", "\udfff", "\x1b[31m", "\u202e", "\r\n", "\u2028", ""])
TEXT = st.lists(
    st.one_of(SPECIAL, st.text(st.characters(exclude_categories=()), max_size=8)), max_size=6
).map("".join)


def _fields(served: Served) -> list[Callable[[str], Any]]:
    agent, approver, admin = served.auth(AGENT), served.auth(APPROVER), served.auth(ADMIN)
    get, put = served.client.get, served.client.put

    def post(url: str, json: Any = None, headers: dict[str, str] | None = None) -> Any:
        return post_json(served.client, url, json, headers or {})

    def propose(text: str, where: str) -> Any:
        arguments: dict[str, Any] = {
            "order_id": "ord_1003",
            "amount_minor": 100,
            "currency": "CNY",
            "reason": "r",
        }
        body: dict[str, Any] = {"tool": "refund_order", "arguments": arguments}
        if where == "tool":
            body["tool"] = text
        elif where == "rationale":
            body["rationale"] = text
        else:
            arguments[where] = text
        return post("/v1/proposals", json=body, headers=agent)

    def decide(text: str, where: str) -> Any:
        proposal = served.proposed(order_id="ord_1004", amount_minor=1)
        body: dict[str, Any] = {"decision": "reject", "reason_code": "other", "reason": "r"}
        body[where] = text
        return served.decide(proposal, APPROVER, **body)

    def path(text: str) -> str:
        return quote(text.encode("utf-8", "surrogatepass"), safe="")

    return [
        lambda t: propose(t, "tool"),
        lambda t: propose(t, "rationale"),
        lambda t: propose(t, "order_id"),
        lambda t: propose(t, "reason"),
        lambda t: propose(t, "currency"),
        lambda t: decide(t, "reason"),
        lambda t: decide(t, "reason_code"),
        lambda t: decide(t, "decision"),
        lambda t: post(
            "/v1/executions",
            json={"proposal_id": t, "confirmation_token": t},
            headers={**agent, "Idempotency-Key": "k"},
        ),
        lambda t: post(
            f"/v1/executions/{path(t) or 'x'}/stop", json={"reason": t}, headers=approver
        ),
        lambda t: post(
            "/v1/executions/exe_x/resolution",
            json={"outcome": "succeeded", "provider_reference": t, "reason": t},
            headers=admin,
        ),
        lambda t: post(
            f"/v1/proposals/{path(t) or 'x'}/revoke", json={"reason": t}, headers=approver
        ),
        lambda t: post(f"/v1/proposals/{path(t) or 'x'}/cancel", headers=agent),
        lambda t: get(f"/v1/proposals/{path(t) or 'x'}", headers=agent),
        lambda t: get(f"/v1/proposals/{path(t) or 'x'}/confirmation-token", headers=agent),
        lambda t: get(f"/v1/executions/{path(t) or 'x'}/receipt", headers=agent),
        lambda t: get(f"/v1/inbox?after={path(t)}", headers=approver),
        lambda t: get(f"/v1/proposals?status={path(t)}", headers=agent),
        lambda t: get(f"/v1/audit?proposal_id={path(t)}", headers=agent),
        lambda t: put(f"/v1/roles/{path(t) or 'x'}/{path(t) or 'y'}", headers=admin),
        lambda t: get(f"/v1/deliveries?status={path(t)}", headers=admin),
    ]


def test_arbitrary_text_in_every_field_is_never_a_5xx(served: Served) -> None:
    fields = _fields(served)

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(field=st.sampled_from(range(len(fields))), text=TEXT)
    def never_a_server_error(field: int, text: str) -> None:
        response = fields[field](text)
        assert response.status_code < 500, (field, text, response.text)

    never_a_server_error()
