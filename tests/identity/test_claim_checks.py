"""Claim names are checked whole, `act` must name an agent, an absurd expiry is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import jwt
import pytest
from fastapi.testclient import TestClient

from signoff import ManualClock
from signoff.exceptions import NotAuthenticated
from signoff.http import Settings, create_app
from signoff.http._settings import DEMO_ISSUER, DEMO_JWT_SECRET
from signoff.identity import Authenticator, VerificationKey
from signoff.web import include_ui
from tests.conftest import World
from tests.web.conftest import hidden_fields

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def claims(**changes: Any) -> dict[str, Any]:
    issued = int(NOW.timestamp())
    body: dict[str, Any] = {
        "iss": DEMO_ISSUER,
        "aud": "signoff",
        "sub": "alice",
        "tenant": "acme",
        "roles": ["refund_approver"],
        "iat": issued,
        "exp": issued + 600,
    }
    body.update(changes)
    return {k: v for k, v in body.items() if v is not ...}


def token(**changes: Any) -> str:
    return jwt.encode(claims(**changes), DEMO_JWT_SECRET, algorithm="HS256")


def refusal(raw: str, clock: ManualClock | None = None) -> NotAuthenticated:
    auth = Authenticator.from_keys(
        [VerificationKey(DEMO_JWT_SECRET, "HS256")],
        issuer=DEMO_ISSUER,
        audience="signoff",
        clock=clock or ManualClock(NOW),
    )
    with pytest.raises(NotAuthenticated) as caught:
        auth.authenticate(raw)
    return caught.value


@pytest.mark.parametrize(
    "changes",
    [
        {"sub": "alice\n"},
        {"tenant": "acme\n"},
        {"roles": ["refund_approver\n"]},
        {"act": {"sub": "agent:bot\n"}},
        {"azp": "crm\n"},
        {"sub": "x" * 256},
    ],
)
def test_a_name_with_a_trailing_newline_or_too_long_is_refused(changes: dict[str, Any]) -> None:
    """Every name is matched whole: `alice\\n` is not alice."""
    assert refusal(token(**changes)).details["reason"] == "claims"


@pytest.mark.parametrize("act", [None, {}, {"sub": ""}, {"sub": None}, [], "agent:bot"])
def test_act_must_be_an_object_naming_the_agent(act: Any) -> None:
    """`act: null` is not "no agent": a token that has `act` must name the agent in it."""
    assert refusal(token(act=act)).details["reason"] == "claims"


@pytest.mark.parametrize("exp", [10**12, 10**20, 2**63, 1e300])
def test_an_absurd_expiry_is_refused(exp: float) -> None:
    """A token claiming to live for centuries is refused, not trusted for centuries."""
    assert refusal(token(exp=exp)).details["reason"] == "lifetime"


@pytest.mark.parametrize("exp", ["2030-01-01", True, None])
def test_a_non_numeric_expiry_is_refused(exp: Any) -> None:
    """`exp` is a number of seconds; anything else is refused."""
    assert refusal(token(exp=exp)).details["reason"] in ("claims", "missing_claim", "invalid")


def test_expiry_is_read_on_the_injected_clock_with_leeway() -> None:
    """exp + leeway is the last accepted instant; one second later is expired."""
    clock = ManualClock(NOW + timedelta(seconds=600 + 29))
    auth = Authenticator.from_keys(
        [VerificationKey(DEMO_JWT_SECRET, "HS256")],
        issuer=DEMO_ISSUER,
        audience="signoff",
        clock=clock,
    )
    assert auth.authenticate(token()).subject == "alice"
    clock.advance(timedelta(seconds=1))
    assert refusal(token(), clock).details["reason"] == "expired"


def test_a_token_from_the_future_is_refused() -> None:
    """nbf or iat later than now (beyond the leeway) is refused."""
    later = int((NOW + timedelta(minutes=5)).timestamp())
    assert refusal(token(nbf=later)).details["reason"] == "immature"
    assert refusal(token(iat=later)).details["reason"] == "immature"


def real_time_token(**changes: Any) -> str:
    issued = int(datetime.now(UTC).timestamp())
    return token(**{"iat": issued, "exp": issued + 600, **changes})


def test_the_api_answers_401_for_each_bad_claim(world: World) -> None:
    """Over HTTP each of these is a 401 problem, never a 500."""
    client = TestClient(create_app(Settings(demo=True), gate=world.gate, extras=[]))
    for bad in (
        real_time_token(sub="alice\n"),
        real_time_token(act=None),
        real_time_token(exp=10**20),
    ):
        response = client.get("/v1/proposals/p_x", headers={"Authorization": f"Bearer {bad}"})
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "not_authenticated"


def test_page_sign_in_with_an_absurd_expiry_is_refused_not_crashed(world: World) -> None:
    """The page answers the sign-in form with 401 and the reason (it used to answer 503)."""
    app = create_app(Settings(demo=True), gate=world.gate, extras=[include_ui])
    client = TestClient(app, base_url="http://127.0.0.1")
    fields = hidden_fields(client.get("/ui/sign-in").text)
    response = client.post(
        "/ui/sign-in", data={**fields, "token": real_time_token(exp=10**20)}, follow_redirects=False
    )
    assert response.status_code == 401
    assert "further ahead" in response.text
    assert client.get("/ui/inbox", follow_redirects=False).status_code == 303
