"""What the pages share: the app state, sessions, CSRF, templates and login hooks."""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff._clock import to_micros
from signoff._model import Principal
from signoff.http._settings import SettingsError
from signoff.http._state import AppState
from signoff.web._csrf import FIELD as CSRF_FIELD
from signoff.web._csrf import CsrfGuard
from signoff.web._identity import LoginProvider
from signoff.web._locale import requested
from signoff.web._render import Renderer
from signoff.web._session import LOGIN_TTL, PendingLogin, SessionCodec, WebSession
from signoff.web._webauthn import Ceremonies

PREFIX = "/ui"
log = logging.getLogger("signoff.web")


@dataclass(slots=True)
class Ui:
    app_state: AppState
    sessions: SessionCodec
    csrf: CsrfGuard
    pages: Renderer
    login_providers: dict[str, LoginProvider] = field(default_factory=dict)
    ceremonies: Ceremonies | None = None
    """WebAuthn challenges for passkeys and device-signed approvals (``_webauthn``)."""

    @classmethod
    def build(cls, app_state: AppState, providers: Sequence[LoginProvider] = ()) -> Ui:
        key = _master_key(app_state)
        return cls(
            app_state=app_state,
            sessions=SessionCodec(key, secure=not app_state.settings.development),
            csrf=CsrfGuard(key),
            pages=Renderer(),
            login_providers={p.name: p for p in providers},
            ceremonies=Ceremonies(key),
        )

    @property
    def demo(self) -> bool:
        return self.app_state.demo is not None

    def now(self) -> datetime:
        return self.app_state.gate.clock.now()

    def session(self, request: Request) -> WebSession | None:
        """The browser's session, unless it was forged, expired or ended by signing out.

        Signing out records the session as ended in the store (``ended_sessions``), so a
        copy of the cookie is dead too; checked on every request of a signed-in session.
        """
        session = self.sessions.decode(request.cookies.get(self.sessions.cookie_name), self.now())
        if session is None or session.principal is None:
            return session
        with self.app_state.gate.store.read() as tx:
            ended = tx.session_ended(session_hash(session.sid))
        return None if ended else session

    def end_session(self, session: WebSession) -> None:
        """Sign-out: this session id is refused from now until its cookie would expire."""
        with self.app_state.gate.store.transaction() as tx:
            tx.end_session(
                session_hash(session.sid), to_micros(session.expires_at), to_micros(self.now())
            )

    def render(
        self,
        template: str,
        session: WebSession,
        context: Mapping[str, Any] | None = None,
        *,
        status: int = 200,
        set_cookie: bool = False,
    ) -> Response:
        """A page with the shared context (who is signed in, the CSRF token, the time)."""
        now = self.now()
        tenant = session.principal.tenant if session.principal else None
        localizer = requested().localizer(self.app_state.settings.time_zone_of(tenant))
        response = self.pages.page(
            template,
            {
                "principal": session.principal,
                "csrf_field": CSRF_FIELD,
                "csrf_token": self.csrf.token(session),
                "demo": self.demo,
                "now": now,
                **(context or {}),
            },
            status=status,
            localizer=localizer,
        )
        if set_cookie:
            self.set_cookie(response, session)
        return response

    def set_cookie(self, response: Response, session: WebSession) -> None:
        response.set_cookie(
            self.sessions.cookie_name,
            self.sessions.encode(session),
            max_age=max(1, int((session.expires_at - self.now()).total_seconds())),
            path="/",
            secure=self.sessions.secure,
            httponly=True,
            samesite="strict",
        )

    def login_of(self, request: Request) -> PendingLogin | None:
        """The OIDC round trip this browser started here, if any (and not expired)."""
        return self.sessions.decode_login(
            request.cookies.get(self.sessions.login_cookie_name), self.now()
        )

    def set_login_cookie(self, response: Response, login: PendingLogin | None) -> None:
        """Lax, so the provider's cross-site redirect back brings it; None deletes it."""
        name = self.sessions.login_cookie_name
        if login is None:
            response.delete_cookie(
                name, path="/", secure=self.sessions.secure, httponly=True, samesite="lax"
            )
            return
        response.set_cookie(
            name,
            self.sessions.encode_login(login, self.now()),
            max_age=int(LOGIN_TTL.total_seconds()),
            path="/",
            secure=self.sessions.secure,
            httponly=True,
            samesite="lax",
        )

    def clear_cookie(self, response: Response) -> None:
        response.delete_cookie(
            self.sessions.cookie_name,
            path="/",
            secure=self.sessions.secure,
            httponly=True,
            samesite="strict",
        )


def ui_of(request: Request) -> Ui:
    ui = request.app.state.signoff_ui
    assert isinstance(ui, Ui)
    return ui


def signed_in(request: Request) -> tuple[Ui, WebSession, Principal] | Response:
    """The person behind this request, or a redirect to the sign-in page."""
    ui = ui_of(request)
    session = ui.session(request)
    if session is None and request.headers.get("sec-fetch-site") == "cross-site":
        # A link from another site (mail, chat) arrives without the SameSite=Strict
        # cookie: one same-site click brings it along, instead of a needless sign-in.
        return ui.render(
            "continue.html",
            WebSession.anonymous(ui.now()),
            {"target": safe_next(request.url.path)},
        )
    if session is None or session.principal is None:
        return RedirectResponse(
            f"{PREFIX}/sign-in?next={quote(safe_next(request.url.path))}", status_code=303
        )
    return ui, session, session.principal


def safe_next(path: object) -> str:
    """Only a path of these pages is a valid place to go after signing in (no open redirect)."""
    if (
        isinstance(path, str)
        and path.startswith(PREFIX + "/")
        and not path.startswith(PREFIX + "/sign-")
        and all(c.isalnum() or c in "/_-" for c in path)
    ):
        return path
    return f"{PREFIX}/inbox"


def new_idempotency_key() -> str:
    """Generated when a decision form is rendered: a double submit repeats it."""
    return "ui_" + secrets.token_hex(16)


def session_hash(sid: str) -> str:
    """What the store keeps of a session id: a hash, so its rows hold no live credential."""
    return hashlib.sha256(b"signoff/session\0" + sid.encode()).hexdigest()


def _master_key(app_state: AppState) -> bytes:
    try:
        return app_state.settings.effective_token_key()
    except SettingsError:
        # A gate passed in without settings keys (tests, embedding): sessions last
        # as long as this process and are valid in this worker only.
        log.warning("no SIGNOFF_TOKEN_KEY: confirmation-page sessions are per-process")
        return secrets.token_bytes(32)
