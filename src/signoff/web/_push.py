"""The page as an installable app (manifest, service worker) and its push subscriptions.

``/ui/notifications`` lists this person's devices and turns one on or off. The
subscription the browser made (``static/push.js``) is checked — an https push
endpoint, a P-256 public key and a 16-byte auth secret — and kept for the person
signed in, with the roles of their sign-in (who may decide is checked again
when a push goes out, and on the page when they decide).
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from signoff._clock import to_micros
from signoff._model import Principal
from signoff.exceptions import InvalidRequest, SignoffError
from signoff.store._sql import PushSubscription
from signoff.web._forms import posted_form
from signoff.web._refusals import refusal_page
from signoff.web._ui import PREFIX, Ui, signed_in

router = APIRouter(prefix=PREFIX, include_in_schema=False)
STATIC = Path(__file__).parent / "static"
MAX_SUBSCRIPTION = 4096
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
MANIFEST = {
    "name": "signoff confirmations",
    "short_name": "signoff",
    "description": "Decide what AI agents may do, from your phone.",
    "start_url": f"{PREFIX}/inbox",
    "scope": f"{PREFIX}/",
    "display": "standalone",
    "background_color": "#ffffff",
    "theme_color": "#1f3a5f",
    "icons": [{"src": f"{PREFIX}/static/icon.svg", "sizes": "any", "type": "image/svg+xml"}],
}


@router.get("/manifest.webmanifest")
def manifest() -> Response:
    return JSONResponse(MANIFEST, media_type="application/manifest+json")


@router.get("/sw.js")
def service_worker() -> Response:
    """Served under /ui/ so its scope is the pages; never cached stale."""
    return Response(
        (STATIC / "sw.js").read_text(encoding="utf-8"),
        media_type="text/javascript",
        headers={"Service-Worker-Allowed": f"{PREFIX}/", "Cache-Control": "no-cache"},
    )


def _public_key(request: Request) -> str | None:
    push = getattr(request.app.state, "signoff_push", None)
    key = getattr(push, "public_key", None)
    return key if isinstance(key, str) else None


@router.get("/notifications")
def notifications(request: Request, changed: str | None = None) -> Response:
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    return ui.render("notifications.html", session, _context(ui, request, principal, changed))


def _context(
    ui: Ui, request: Request, principal: Principal, changed: str | None
) -> dict[str, object]:
    with ui.app_state.gate.store.read() as tx:
        mine = tx.push_subscriptions_of(principal.tenant, principal.subject)
    words = {"on": "Notifications are on for this device.", "off": "Turned off."}
    return {
        "push_key": _public_key(request),
        "subscriptions": mine,
        "changed": words.get(changed or ""),
    }


@router.post("/notifications")
async def change(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    principal = session.principal
    if principal is None or _public_key(request) is None:
        return RedirectResponse(f"{PREFIX}/notifications", status_code=303)
    try:
        if fields.get("action") == "unsubscribe":
            await run_in_threadpool(_unsubscribe, ui, principal, fields.get("endpoint", ""))
            return RedirectResponse(f"{PREFIX}/notifications?changed=off", status_code=303)
        subscription = parse_subscription(fields.get("subscription", ""), principal, ui)
        await run_in_threadpool(_subscribe, ui, subscription)
    except SignoffError as exc:
        return refusal_page(ui, session, exc)
    return RedirectResponse(f"{PREFIX}/notifications?changed=on", status_code=303)


def parse_subscription(raw: str, principal: Principal, ui: Ui) -> PushSubscription:
    """The browser's ``PushSubscription.toJSON()``, checked; an InvalidRequest otherwise."""
    if not raw or len(raw) > MAX_SUBSCRIPTION:
        raise InvalidRequest("no subscription came back from the browser; try again")
    try:
        data = json.loads(raw)
        endpoint, keys = str(data["endpoint"]), data["keys"]
        p256dh, auth = str(keys["p256dh"]), str(keys["auth"])
        point, secret = _b64url(p256dh), _b64url(auth)
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise InvalidRequest("the browser's subscription is not one signoff can use") from exc
    parts = urlsplit(endpoint)
    secure = parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK)
    if not secure or not parts.hostname or len(endpoint) > 1024:
        raise InvalidRequest("a push endpoint must be an https URL")
    if len(point) != 65 or point[0] != 4 or len(secret) != 16:
        raise InvalidRequest("the subscription's keys are not a P-256 key and a 16-byte secret")
    return PushSubscription(
        endpoint,
        principal.tenant,
        principal.subject,
        tuple(sorted(principal.roles)),
        p256dh,
        auth,
        to_micros(ui.now()),
    )


def _b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _subscribe(ui: Ui, subscription: PushSubscription) -> None:
    with ui.app_state.gate.store.transaction() as tx:
        tx.put_push_subscription(subscription)


def _unsubscribe(ui: Ui, principal: Principal, endpoint: str) -> None:
    with ui.app_state.gate.store.transaction() as tx:
        tx.delete_push_subscription(endpoint, tenant=principal.tenant, subject=principal.subject)
