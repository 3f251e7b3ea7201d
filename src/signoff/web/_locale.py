"""Which language and time zone a page is drawn in, for this request.

The identity token's ``locale`` and ``zoneinfo`` claims (kept at sign-in in a
cookie of their own: they say how the person reads, never who they are or what
they may do), else the browser's ``Accept-Language``; the zone falls back to the
tenant's (``SIGNOFF_TIME_ZONES``), then UTC.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from signoff._i18n import DEFAULT_LOCALE, Localizer, localizer, negotiate, supported, zone

PREFS_COOKIE = "signoff_prefs"
MAX_COOKIE = 200


@dataclass(frozen=True, slots=True)
class Preferences:
    locale: str = DEFAULT_LOCALE
    zone_name: str | None = None

    def localizer(self, tenant_zone: str | None) -> Localizer:
        return localizer(self.locale, self.zone_name, tenant_zone=tenant_zone)


REQUEST: ContextVar[Preferences | None] = ContextVar("signoff_page_preferences", default=None)


def requested() -> Preferences:
    """This request's preferences (English and UTC outside a page request)."""
    return REQUEST.get() or Preferences()


def remember_preferences(response: Response, claims: Mapping[str, str], *, secure: bool) -> None:
    """Keep the sign-in's ``locale``/``zoneinfo`` (validated) for the pages; none: forget."""
    kept = {}
    if supported(claims.get("locale")) is not None:
        kept["locale"] = str(claims["locale"])
    if zone(claims.get("zoneinfo")) is not None:
        kept["zoneinfo"] = str(claims["zoneinfo"])
    if not kept:
        response.delete_cookie(PREFS_COOKIE, path="/", secure=secure, httponly=True, samesite="lax")
        return
    response.set_cookie(
        PREFS_COOKIE, urlencode(kept), path="/", secure=secure, httponly=True, samesite="lax"
    )


def preferences(headers: Mapping[str, str]) -> Preferences:
    claims: dict[str, str] = {}
    raw = headers.get("cookie")
    if raw:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(raw)
        except Exception:  # a malformed Cookie header: draw the page in the browser's language
            jar = SimpleCookie()
        if PREFS_COOKIE in jar and len(jar[PREFS_COOKIE].value) <= MAX_COOKIE:
            claims = dict(parse_qsl(jar[PREFS_COOKIE].value))
    locale = negotiate(claims.get("locale"), headers.get("accept-language"))
    return Preferences(locale, claims.get("zoneinfo") if zone(claims.get("zoneinfo")) else None)


class Localization:
    """Pure ASGI middleware: the request's :class:`Preferences` for the pages under ``prefix``."""

    def __init__(self, app: ASGIApp, *, prefix: str = "/ui") -> None:
        self.app = app
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "")
        if scope["type"] != "http" or not (
            path == self.prefix or path.startswith(self.prefix + "/")
        ):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        token = REQUEST.set(preferences(headers))
        try:
            await self.app(scope, receive, send)
        finally:
            REQUEST.reset(token)
