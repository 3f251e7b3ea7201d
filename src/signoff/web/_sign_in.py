"""Sign-in and sign-out: a pasted JWT, a demo user (demo mode only), or an OIDC login hook."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import re
import secrets
from typing import Any

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff.catalog._types import MAX_STEP_UP_AGE
from signoff.exceptions import NotAuthenticated
from signoff.http._settings import SettingsError
from signoff.web import _enrolment
from signoff.web._forms import posted_form
from signoff.web._identity import DEMO_USERS, SignIn, demo_user, sign_in_person, sign_in_with_jwt
from signoff.web._locale import remember_preferences
from signoff.web._session import SESSION_TTL, PendingLogin, WebSession
from signoff.web._ui import PREFIX, Ui, safe_next, ui_of

router = APIRouter(prefix=PREFIX, include_in_schema=False)


@router.get("")
def root() -> Response:
    return RedirectResponse(f"{PREFIX}/inbox", status_code=303)


@router.get("/sign-in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    ui = ui_of(request)
    session = ui.session(request)
    fresh = session is None
    if session is None:
        session = WebSession.anonymous(ui.now())
    return _sign_in_form(ui, session, safe_next(next), set_cookie=fresh)


@router.post("/sign-in")
async def sign_in_with_token(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    try:
        signed = await run_in_threadpool(
            sign_in_with_jwt, ui.app_state.authenticator, fields.get("token", "")
        )
    except NotAuthenticated as exc:
        return _sign_in_form(ui, session, safe_next(fields.get("next")), error=exc.message)
    return _start_session(ui, session, signed, via="jwt", next_path=fields.get("next"))


@router.post("/sign-in/demo")
async def sign_in_as_demo_user(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    user = demo_user(fields.get("user"))
    if not ui.demo or user is None:
        return ui.render(
            "error.html",
            session,
            {"title": "Not found", "message": "There is no such demo user on this server."},
            status=404,
        )
    # Demo users are the people the demo's own issuer names in `signoff dev-token`.
    person = dataclasses.replace(user.principal, issuer=_demo_issuer(ui))
    signed = SignIn(person, ui.now() + SESSION_TTL)
    return _start_session(ui, session, signed, via="demo", next_path=fields.get("next"))


@router.post("/sign-out")
async def sign_out(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, _ = form
    if session.principal is not None:
        await run_in_threadpool(ui.end_session, session)
    response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    ui.clear_cookie(response)
    return response


@router.get("/sign-in/oidc/{name}")
def oidc_start(
    request: Request,
    name: str,
    next: str | None = None,
    max_age: str | None = None,
    acr_values: str | None = None,
) -> Response:
    """Send the browser to the provider; ``max_age``/``acr_values`` ask it for a step-up."""
    ui = ui_of(request)
    provider = ui.login_providers.get(name)
    if provider is None:
        return _no_provider(ui)
    step_up = _step_up(max_age, acr_values)
    if step_up is None:
        return _sign_in_form(ui, _session_or_new(ui, request), safe_next(next), error=_BAD_STEP_UP)
    verifier = secrets.token_urlsafe(48)
    login = PendingLogin(
        provider=name,
        state=secrets.token_urlsafe(24),
        nonce=secrets.token_urlsafe(24),
        code_verifier=verifier,
        next_path=safe_next(next),
        max_age="" if step_up[0] is None else str(step_up[0]),
        acr_values=" ".join(step_up[1]),
    )
    asked: dict[str, Any] = {}
    if step_up[0] is not None:
        asked["max_age"] = step_up[0]
    if step_up[1]:
        asked["acr_values"] = step_up[1]
    try:
        url = provider.authorization_url(
            state=login.state,
            nonce=login.nonce,
            code_challenge=_s256(verifier),
            redirect_uri=_callback_uri(request, name),
            **asked,
        )
    except NotAuthenticated as exc:
        return _sign_in_form(ui, _session_or_new(ui, request), login.next_path, error=exc.message)
    response = RedirectResponse(url, status_code=303)
    ui.set_login_cookie(response, login)
    return response


@router.get("/sign-in/oidc/{name}/callback")
def oidc_callback(
    request: Request, name: str, code: str | None = None, state: str | None = None
) -> Response:
    """The provider sends the browser back here; ``state`` must be the one we sent."""
    ui = ui_of(request)
    provider = ui.login_providers.get(name)
    if provider is None:
        return _no_provider(ui)
    session = _session_or_new(ui, request)
    login = ui.login_of(request)
    if (
        login is None
        or login.provider != name
        or not code
        or not hmac.compare_digest((state or "").encode(), login.state.encode())
    ):
        return _login_failed(ui, session, f"{PREFIX}/inbox", _LOGIN_LOST)
    try:
        completed = provider.complete(
            code=code,
            nonce=login.nonce,
            code_verifier=login.code_verifier,
            redirect_uri=_callback_uri(request, name),
        )
        signed = sign_in_person(completed.principal, completed.valid_until)
        if login.max_age and signed.principal.auth_time is None:
            # OIDC Core 3.1.2.1: with max_age, the ID token must say when (auth_time).
            raise NotAuthenticated(
                "the identity provider did not say when it authenticated you (auth_time)",
                reason="login",
            )
    except NotAuthenticated as exc:
        return _login_failed(ui, session, login.next_path, exc.message)
    if login.enrolment:
        return _enrolment.finish(ui, session, login, completed)
    response = _start_session(ui, session, signed, via=f"oidc:{name}", next_path=login.next_path)
    ui.set_login_cookie(response, None)
    return response


def _demo_issuer(ui: Ui) -> str | None:
    try:
        return ui.app_state.settings.effective_issuer()
    except SettingsError:
        return None


def _session_or_new(ui: Ui, request: Request) -> WebSession:
    return ui.session(request) or WebSession.anonymous(ui.now())


def _login_failed(ui: Ui, session: WebSession, next_path: str, message: str) -> Response:
    response = _sign_in_form(ui, session, next_path, error=message, set_cookie=True)
    ui.set_login_cookie(response, None)
    return response


_LOGIN_LOST = "The sign-in could not be completed (state mismatch or expired). Try again."


def _start_session(
    ui: Ui, session: WebSession, signed: SignIn, *, via: str, next_path: str | None
) -> Response:
    until = min(signed.valid_until, ui.now() + SESSION_TTL)
    response = RedirectResponse(safe_next(next_path), status_code=303)
    ui.set_cookie(response, session.signed_in(signed.principal, via=via, until=until))
    remember_preferences(response, signed.preferences, secure=ui.sessions.secure)
    return response


def _sign_in_form(
    ui: Ui,
    session: WebSession,
    next_path: str,
    *,
    error: str | None = None,
    set_cookie: bool = False,
) -> Response:
    context: dict[str, Any] = {
        "next": next_path,
        "error": error,
        "demo_users": DEMO_USERS if ui.demo else (),
        "providers": list(ui.login_providers.values()),
    }
    status = 401 if error else 200
    return ui.render("sign_in.html", session, context, status=status, set_cookie=set_cookie)


def _no_provider(ui: Ui) -> Response:
    return ui.render(
        "error.html",
        WebSession.anonymous(ui.now()),
        {"title": "Not found", "message": "There is no such sign-in method on this server."},
        status=404,
    )


_BAD_STEP_UP = "The sign-in link asks for an impossible max_age or acr_values. Try again."
_ACR_VALUE = re.compile(r"[\x21-\x7e]{1,255}")


def _step_up(max_age: str | None, acr_values: str | None) -> tuple[int | None, list[str]] | None:
    """A step-up's parameters as the provider gets them; None when they are malformed."""
    age: int | None = None
    if max_age:
        if not max_age.isdigit() or int(max_age) > MAX_STEP_UP_AGE:
            return None
        age = int(max_age)
    values = (acr_values or "").split()
    if len(values) > 16 or not all(_ACR_VALUE.fullmatch(v) for v in values):
        return None
    return age, values


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _callback_uri(request: Request, name: str) -> str:
    return str(request.url_for("oidc_callback", name=name))
