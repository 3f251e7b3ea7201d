"""A verified bearer token is answered from memory for a few seconds, never past its exp."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import jwt
import pytest

from signoff import ManualClock
from signoff.exceptions import NotAuthenticated
from signoff.http._settings import DEMO_ISSUER, DEMO_JWT_SECRET
from signoff.identity import Authenticator, VerificationKey
from signoff.identity._authenticator import REMEMBER_FOR
from signoff.identity._issuer import TrustedIssuer

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _auth(clock: ManualClock) -> Authenticator:
    return Authenticator.from_keys(
        [VerificationKey(DEMO_JWT_SECRET, "HS256")],
        issuer=DEMO_ISSUER,
        audience="signoff",
        leeway_seconds=0,
        clock=clock,
    )


def _token(lifetime: timedelta, subject: str = "alice") -> str:
    issued = int(NOW.timestamp())
    claims: dict[str, object] = {"iss": DEMO_ISSUER, "aud": "signoff", "sub": subject}
    claims |= {"tenant": "acme", "iat": issued, "exp": issued + int(lifetime.total_seconds())}
    return jwt.encode(claims, DEMO_JWT_SECRET, algorithm="HS256")


def test_a_client_repeating_its_token_is_verified_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request of a client carries the same token: one signature check for them all."""
    checks: list[str] = []
    verify = TrustedIssuer.verify

    def counted(self: TrustedIssuer, *args: object, **kwargs: object) -> object:
        checks.append("checked")
        return verify(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(TrustedIssuer, "verify", counted)
    clock = ManualClock(NOW)
    auth, raw = _auth(clock), _token(timedelta(minutes=10))
    assert [auth.authenticate(raw).subject for _ in range(5)] == ["alice"] * 5
    assert checks == ["checked"]
    clock.advance(REMEMBER_FOR)
    assert auth.authenticate(raw).subject == "alice"
    assert checks == ["checked", "checked"]


def test_a_remembered_token_still_expires_at_its_exp() -> None:
    """Remembered 30 s at most, and never past exp: at exp it is refused as expired."""
    clock = ManualClock(NOW)
    auth, raw = _auth(clock), _token(timedelta(seconds=10))
    assert auth.authenticate(raw).subject == "alice"
    clock.advance(timedelta(seconds=10))
    with pytest.raises(NotAuthenticated) as refused:
        auth.authenticate(raw)
    assert refused.value.details["reason"] == "expired"


def test_another_token_is_verified_on_its_own() -> None:
    """A forged token beside a remembered one is still checked (and refused)."""
    clock = ManualClock(NOW)
    auth, raw = _auth(clock), _token(timedelta(minutes=10))
    auth.authenticate(raw)
    forged = raw[:-4] + ("AAAA" if not raw.endswith("AAAA") else "BBBB")
    with pytest.raises(NotAuthenticated):
        auth.authenticate(forged)
    assert auth.authenticate(_token(timedelta(minutes=10), "bob")).subject == "bob"
