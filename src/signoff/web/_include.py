"""Attach the confirmation pages to the HTTP app (the ``signoff.http`` extension point)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from signoff.http._state import AppState
from signoff.web import (
    _batch,
    _decide,
    _links,
    _live,
    _mandate_pages,
    _passkeys,
    _proposal_pages,
    _push,
    _sign_in,
)
from signoff.web._demo_oauth import include_demo_oauth
from signoff.web._errors import ErrorPages
from signoff.web._headers import SecurityHeaders
from signoff.web._identity import LoginProvider
from signoff.web._locale import Localization
from signoff.web._oidc import oidc_providers
from signoff.web._ui import PREFIX, Ui

STATIC = Path(__file__).parent / "static"


def include_ui(app: FastAPI, state: AppState) -> None:
    """The pages under ``/ui/``: JWT sign-in, OIDC sign-in per configured issuer, demo users."""
    install_ui(app, state, login_providers=oidc_providers(state.authenticator))


def install_ui(
    app: FastAPI, state: AppState, *, login_providers: Sequence[LoginProvider] = ()
) -> None:
    """The pages with OIDC login hooks: name a function calling this in ``EXTRAS``."""
    ui = Ui.build(state, login_providers)
    app.state.signoff_ui = ui
    # Added first, so the security headers (added next, outside it) cover the error pages too.
    app.add_middleware(ErrorPages, ui=ui, prefix=PREFIX)
    app.add_middleware(SecurityHeaders, prefix=PREFIX)
    app.add_middleware(Localization, prefix=PREFIX)
    app.mount(f"{PREFIX}/static", StaticFiles(directory=STATIC), name="ui-static")
    for module in (
        _sign_in,
        _proposal_pages,
        _mandate_pages,
        _decide,
        _batch,
        _live,
        _passkeys,
        _links,
        _push,
    ):
        app.include_router(module.router)
    include_demo_oauth(app, state)  # demo mode only: MCP clients sign in with OAuth
