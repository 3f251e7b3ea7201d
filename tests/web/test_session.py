"""The session cookie: signed, HttpOnly, SameSite=Strict, Secure with __Host- in production."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient

from signoff import Principal
from signoff._model import PAGE_SURFACE
from signoff.http import Settings
from signoff.web._session import SessionCodec, WebSession
from tests.conftest import APPROVER, World
from tests.web.conftest import BASE, Pages, hidden_fields, make_pages_app

NOW = datetime(2026, 1, 1, tzinfo=UTC)
KEY = b"s" * 32


def _signed_in() -> WebSession:
    return WebSession.anonymous(NOW).signed_in(APPROVER, via="jwt", until=NOW + timedelta(hours=1))


def test_a_session_round_trips_with_who_signed_in() -> None:
    """sub, tenant and roles come back exactly, as the page surface; the session id is new."""
    codec = SessionCodec(KEY, secure=True)
    anonymous = WebSession.anonymous(NOW)
    session = anonymous.signed_in(APPROVER, via="jwt", until=NOW + timedelta(hours=1))
    decoded = codec.decode(codec.encode(session), NOW)
    assert decoded is not None
    assert decoded.principal == dataclasses.replace(APPROVER, client=PAGE_SURFACE)
    assert decoded.sid == session.sid != anonymous.sid


def test_a_tampered_or_foreign_cookie_is_no_session() -> None:
    """Changing one character, or signing with another key, gives no session at all."""
    codec = SessionCodec(KEY, secure=True)
    value = codec.encode(_signed_in())
    mac = value.split(".")[1]
    forged = codec.encode(
        WebSession.anonymous(NOW).signed_in(
            Principal("mallory", "acme", frozenset({"refund_approver"})),
            via="jwt",
            until=NOW + timedelta(hours=1),
        )
    ).split(".")[0]
    assert codec.decode(f"{forged}.{mac}", NOW) is None
    assert codec.decode(value[:-2] + ("AA" if value[-2:] != "AA" else "BB"), NOW) is None
    assert SessionCodec(b"t" * 32, secure=True).decode(value, NOW) is None
    assert codec.decode("not a cookie", NOW) is None and codec.decode(None, NOW) is None


def test_an_expired_session_is_no_session() -> None:
    """The expiry is inside the signed payload; the server clock decides."""
    codec = SessionCodec(KEY, secure=True)
    value = codec.encode(_signed_in())
    assert codec.decode(value, NOW + timedelta(minutes=59)) is not None
    assert codec.decode(value, NOW + timedelta(hours=1)) is None


def test_development_cookie_is_httponly_and_strict(pages: Pages) -> None:
    """Demo mode over plain http: HttpOnly, SameSite=Strict, Path=/, no Secure."""
    page = pages.client.get("/ui/sign-in")
    response = pages.client.post(
        "/ui/sign-in/demo",
        data={**hidden_fields(page.text), "user": "alice"},
        follow_redirects=False,
    )
    for cookie in (page.headers["set-cookie"], response.headers["set-cookie"]):
        lowered = cookie.lower()
        assert cookie.startswith("signoff-ui=") and "secure" not in lowered
        assert "httponly" in lowered and "samesite=strict" in lowered and "path=/" in lowered


def test_production_cookie_is_secure_with_the_host_prefix(world: World) -> None:
    """Outside development the cookie is __Host-signoff-ui; Secure; HttpOnly; Strict."""
    settings = Settings(token_key=KEY, jwt_issuer="https://idp.example", jwt_hs256_secret=KEY)
    app = make_pages_app(world, settings)
    with TestClient(app, base_url=BASE.replace("http:", "https:")) as client:
        cookie = client.get("/ui/sign-in").headers["set-cookie"]
    assert cookie.startswith("__Host-signoff-ui=")
    lowered = cookie.lower()
    assert "secure" in lowered and "httponly" in lowered and "samesite=strict" in lowered
