"""``GET /ui/events``: the live inbox, as server-sent events from the tenant's audit chain.

A signed-in person's page opens one ``EventSource`` (``static/live.js``, a
same-origin script under the strict CSP). Each event names only a type and
its audit seq (the SSE id, so a reconnect resumes with ``Last-Event-ID``),
and only for proposals the person may see (their circle); the page then
fetches its own content, which applies every read rule. A
stream ends after ``MAX_STREAM_SECONDS`` and the browser reconnects, so no
connection outlives a session or holds a worker forever.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable

import anyio
from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse

from signoff._model import Principal
from signoff.exceptions import NotFound
from signoff.gate._async import AsyncGate
from signoff.gate._gate import Gate
from signoff.notify._feed import FeedEvent, events_after, head
from signoff.store._base import Store
from signoff.web._ui import PREFIX, ui_of

router = APIRouter(prefix=PREFIX, include_in_schema=False)
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
MAX_STREAM_SECONDS = 300.0
RETRY_MILLISECONDS = 2000


@router.get("/events")
async def events(request: Request) -> Response:
    ui = ui_of(request)
    session = await run_in_threadpool(ui.session, request)
    if session is None or session.principal is None:
        return PlainTextResponse("sign in first", status_code=401)
    state = ui.app_state
    store, tenant = state.gate.store, session.principal.tenant
    may_see = _circle(state.gate, session.principal)
    # A reconnect resumes after its Last-Event-ID; a fresh page after the seq it was drawn at.
    start = _seq(request.headers.get("last-event-id"))
    if start is None:
        start = _seq(request.query_params.get("after"))
    if start is None:
        start = await state.agate.run_sync(head, store, tenant)
    return StreamingResponse(
        _stream(request, state.agate, store, tenant, start, may_see),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


def _circle(gate: Gate, principal: Principal) -> Callable[[str], bool]:
    """Whether ``principal`` may see a proposal now (the gate's read rules, role directory)."""

    def may_see(proposal_id: str) -> bool:
        try:
            gate.proposal(principal, proposal_id)
        except NotFound:
            return False
        return True

    return may_see


async def _stream(
    request: Request,
    agate: AsyncGate,
    store: Store,
    tenant: str,
    cursor: int,
    may_see: Callable[[str], bool],
) -> AsyncIterator[str]:
    yield f"retry: {RETRY_MILLISECONDS}\n\n"
    started = last_sent = time.monotonic()
    while time.monotonic() - started < MAX_STREAM_SECONDS:
        if await request.is_disconnected():
            return
        cursor, feed = await agate.run_sync(events_after, store, tenant, cursor, may_see=may_see)
        for event in feed:
            yield _message(event)
            last_sent = time.monotonic()
        if not feed:
            if time.monotonic() - last_sent >= KEEPALIVE_SECONDS:
                yield ": keep-alive\n\n"
                last_sent = time.monotonic()
            await anyio.sleep(POLL_SECONDS)


def _message(event: FeedEvent) -> str:
    data = json.dumps({"type": event.event_type, "seq": event.seq})
    return f"id: {event.seq}\nevent: inbox\ndata: {data}\n\n"


def _seq(raw: str | None) -> int | None:
    return (
        int(raw) if raw is not None and raw.isascii() and raw.isdigit() and len(raw) < 19 else None
    )
