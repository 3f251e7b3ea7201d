"""Tell the agent when a page decision ends a URL elicitation (elicitation/complete).

After a 2025-11-25 client accepted to open the confirmation page, the session
is remembered with the proposal. While the server runs, a watcher re-reads
each such proposal; once it is no longer awaiting a decision (approved or
declined on the page, cancelled, expired), it sends the URL-mode
elicitation-complete notification with the proposal id as ``elicitationId``,
so the agent asks for the status instead of polling. The 2026-07-28 protocol
has no such notification: there the client retries the call with the answer.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio

from signoff._model import Principal, ProposalStatus
from signoff.exceptions import NotFound, SignoffError
from signoff.gate._async import AsyncGate

log = logging.getLogger("signoff.mcp")


@dataclass(frozen=True, slots=True)
class _Watched:
    session: Any
    """The MCP server session that asked (has ``send_elicit_complete``)."""
    principal: Principal
    proposal_id: str


class CompletionWatcher:
    """Pending URL elicitations of this server, checked every ``interval`` seconds."""

    def __init__(self, gate: AsyncGate, *, interval: float = 0.5) -> None:
        self.gate = gate
        self.interval = interval
        self._watched: dict[tuple[int, str], _Watched] = {}

    def watch(self, session: Any, principal: Principal, proposal_id: str) -> None:
        self._watched[(id(session), proposal_id)] = _Watched(session, principal, proposal_id)

    @property
    def pending(self) -> int:
        return len(self._watched)

    async def check(self) -> int:
        """One pass: notify and forget every elicitation whose proposal was decided; count them."""
        done = 0
        for key, watched in list(self._watched.items()):
            try:
                proposal = await self.gate.proposal(watched.principal, watched.proposal_id)
            except NotFound:
                self._watched.pop(key, None)
                continue
            except SignoffError as exc:  # the store is away: ask again on the next pass
                log.warning("elicitation %s: cannot read it now: %s", watched.proposal_id, exc)
                continue
            open_ = proposal.status is ProposalStatus.AWAITING_CONFIRMATION
            if open_ and self.gate.clock.now() < proposal.expires_at:
                continue
            self._watched.pop(key, None)
            try:
                await watched.session.send_elicit_complete(watched.proposal_id)
                done += 1
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                log.info("elicitation %s: the session ended first", watched.proposal_id)
            except Exception:
                # One broken session must not stop the watcher (it runs for the whole server).
                log.exception("elicitation %s: the notification failed", watched.proposal_id)
        return done

    async def run(self) -> None:
        while True:
            await anyio.sleep(self.interval)
            await self.check()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            group.start_soon(self.run)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
