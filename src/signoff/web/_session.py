"""The signed session cookie of the confirmation pages.

The cookie holds who signed in (sub, tenant, roles, the issuer that vouched for
them and the client of the token they signed in with), a random session id and
an expiry, signed with HMAC-SHA256 under a key derived from the server's
token key (stable across workers and restarts). It is HttpOnly,
SameSite=Strict and, outside development, Secure with the ``__Host-`` prefix.
A browser without a cookie gets an anonymous session, so even the sign-in
form carries a CSRF token (``_csrf``); signing in rotates the session id.

An OpenID Connect round trip keeps its ``state``, ``nonce`` and PKCE verifier
in a second, short-lived cookie signed the same way but ``SameSite=Lax``: the
provider sends the browser back with a cross-site navigation, which carries
no ``Strict`` cookie.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from signoff._model import PAGE_SURFACE, Principal

SESSION_TTL = timedelta(hours=8)
ANONYMOUS_TTL = timedelta(minutes=30)
LOGIN_TTL = timedelta(minutes=10)
MAX_COOKIE_BYTES = 3800
PRODUCTION_COOKIE = "__Host-signoff-ui"
DEVELOPMENT_COOKIE = "signoff-ui"
PRODUCTION_LOGIN_COOKIE = "__Host-signoff-login"
DEVELOPMENT_LOGIN_COOKIE = "signoff-login"


def derive_key(master: bytes, label: str) -> bytes:
    """A separate key per purpose, so a session key never doubles as a token key."""
    return hmac.new(master, f"signoff.web:{label}".encode(), hashlib.sha256).digest()


@dataclass(frozen=True, slots=True)
class PendingLogin:
    """What an OIDC round trip must bring back: state, nonce and the PKCE verifier; and a
    step-up's ``max_age`` (seconds, as text) and ``acr_values`` when the page asked for one."""

    provider: str
    state: str
    nonce: str
    code_verifier: str
    next_path: str
    max_age: str = ""
    acr_values: str = ""
    enrolment: str = ""
    """A passkey waiting for this sign-in to vouch for it (JSON; ``web/_enrolment.py``)."""


@dataclass(frozen=True, slots=True)
class WebSession:
    """One browser's session: anonymous until someone signs in."""

    sid: str
    expires_at: datetime
    principal: Principal | None = None
    signed_in_via: str | None = None

    @classmethod
    def anonymous(cls, now: datetime) -> WebSession:
        return cls(sid=secrets.token_urlsafe(24), expires_at=now + ANONYMOUS_TTL)

    def signed_in(self, principal: Principal, *, via: str, until: datetime) -> WebSession:
        """A new session id for the signed-in person (no session fixation)."""
        return WebSession(
            sid=secrets.token_urlsafe(24), expires_at=until, principal=principal, signed_in_via=via
        )


class SessionCodec:
    """Signs sessions into cookie values and verifies them back."""

    def __init__(self, key: bytes, *, secure: bool) -> None:
        self._key = derive_key(key, "session")
        self.secure = secure
        self.cookie_name = PRODUCTION_COOKIE if secure else DEVELOPMENT_COOKIE
        self.login_cookie_name = PRODUCTION_LOGIN_COOKIE if secure else DEVELOPMENT_LOGIN_COOKIE

    def encode(self, session: WebSession) -> str:
        payload = b64url(json.dumps(_to_dict(session), separators=(",", ":")).encode())
        value = f"{payload}.{b64url(self._mac(payload))}"
        if len(value) > MAX_COOKIE_BYTES:
            raise ValueError("the session does not fit in a cookie (too many roles?)")
        return value

    def decode(self, value: str | None, now: datetime) -> WebSession | None:
        """The session, or None when the cookie is absent, forged, malformed or expired."""
        if not value or len(value) > MAX_COOKIE_BYTES or value.count(".") != 1:
            return None
        payload, mac = value.split(".")
        try:
            if not hmac.compare_digest(_unb64(mac), self._mac(payload)):
                return None
            session = _from_dict(json.loads(_unb64(payload)))
        except (ValueError, KeyError, TypeError):
            return None
        return session if now < session.expires_at else None

    def encode_login(self, login: PendingLogin, now: datetime) -> str:
        """The login cookie: what the provider's answer must match, for LOGIN_TTL."""
        body = {"login": list(_login_fields(login)), "exp": (now + LOGIN_TTL).isoformat()}
        payload = b64url(json.dumps(body, separators=(",", ":")).encode())
        return f"{payload}.{b64url(self._mac(payload, b'login'))}"

    def decode_login(self, value: str | None, now: datetime) -> PendingLogin | None:
        if not value or len(value) > MAX_COOKIE_BYTES or value.count(".") != 1:
            return None
        payload, mac = value.split(".")
        try:
            if not hmac.compare_digest(_unb64(mac), self._mac(payload, b"login")):
                return None
            body = json.loads(_unb64(payload))
            if not now < datetime.fromisoformat(body["exp"]):
                return None
            return PendingLogin(*(str(part) for part in body["login"]))
        except (ValueError, KeyError, TypeError):
            return None

    def _mac(self, payload: str, purpose: bytes = b"session") -> bytes:
        return hmac.new(self._key, purpose + b"\0" + payload.encode(), "sha256").digest()


def _login_fields(login: PendingLogin) -> tuple[str, ...]:
    return (
        login.provider,
        login.state,
        login.nonce,
        login.code_verifier,
        login.next_path,
        login.max_age,
        login.acr_values,
        login.enrolment,
    )


def _to_dict(session: WebSession) -> dict[str, Any]:
    body: dict[str, Any] = {"sid": session.sid, "exp": session.expires_at.isoformat()}
    if session.principal is not None:
        body["sub"] = session.principal.subject
        body["tenant"] = session.principal.tenant
        body["roles"] = sorted(session.principal.roles)
        body["via"] = session.signed_in_via
        # When and how the identity provider authenticated the person (step-up policies).
        if session.principal.auth_time is not None:
            body["auth_time"] = int(session.principal.auth_time.timestamp())
        if session.principal.acr is not None:
            body["acr"] = session.principal.acr
        body["iss"] = session.principal.issuer
        body["cli"] = session.principal.signed_in_client
    return body


def _from_dict(body: dict[str, Any]) -> WebSession:
    principal = None
    if "sub" in body:
        principal = Principal(
            subject=str(body["sub"]),
            tenant=str(body["tenant"]),
            roles=frozenset(str(r) for r in body["roles"]),
            client=PAGE_SURFACE,
            auth_time=None
            if body.get("auth_time") is None
            else datetime.fromtimestamp(int(body["auth_time"]), UTC),
            acr=None if body.get("acr") is None else str(body["acr"]),
            issuer=_optional(body.get("iss")),
            signed_in_client=_optional(body.get("cli")),
        )
    return WebSession(
        sid=str(body["sid"]),
        expires_at=datetime.fromisoformat(body["exp"]),
        principal=principal,
        signed_in_via=body.get("via"),
    )


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
