"""What the HTTP app holds: the gate, settings, authenticator, metrics and demo objects.

``create_app`` stores one :class:`AppState` on ``app.state.signoff``; routers
and extensions (the confirmation pages, the MCP endpoint) reach it with
:func:`state_of` or the ``app_state`` dependency.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from starlette.applications import Starlette

from signoff.gate._async import DEFAULT_MAX_THREADS, AsyncGate
from signoff.gate._gate import Gate
from signoff.http._catalog import DemoObjects as DemoObjects
from signoff.http._metrics import Metrics
from signoff.http._rate_limit import ProposalRateLimit
from signoff.http._settings import Settings
from signoff.identity import Authenticator
from signoff.store._sqlite import SQLiteStore

LifespanFactory = Callable[[], AbstractAsyncContextManager[None]]


SQLITE_GATE_THREADS = 4
"""SQLite has one writer at a time: more threads only add connections (a page cache each)."""


def gate_threads(gate: Gate) -> int:
    """Worker threads for gate calls: a few on SQLite, the default on a pooled server."""
    return SQLITE_GATE_THREADS if isinstance(gate.store, SQLiteStore) else DEFAULT_MAX_THREADS


@dataclass(slots=True)
class AppState:
    settings: Settings
    gate: Gate
    authenticator: Authenticator
    metrics: Metrics
    demo: DemoObjects | None = None
    lifespans: list[LifespanFactory] = field(default_factory=list)
    """Async context managers entered while the server runs (e.g. an MCP session manager)."""
    closers: list[Callable[[], None]] = field(default_factory=list)
    """What the app opened itself and closes at shutdown (never a gate passed in)."""
    rate_limit: ProposalRateLimit | None = None
    """Per-agent proposal limit (``SIGNOFF_PROPOSAL_RATE_LIMIT``); None: unlimited."""
    authorization_servers: list[str] = field(default_factory=list)
    """OAuth authorization servers this app runs itself (the demo's), by issuer URL; RFC 9728
    metadata lists them before the trusted issuers."""
    agate: AsyncGate = field(init=False)
    """``gate`` for async handlers: each call runs in a bounded worker thread."""

    def __post_init__(self) -> None:
        self.agate = AsyncGate(self.gate, max_threads=gate_threads(self.gate))
        self.closers.append(self.agate.close)

    def add_lifespan(self, factory: LifespanFactory) -> None:
        """Run ``factory()`` as an async context for the server's lifetime."""
        self.lifespans.append(factory)

    def close(self) -> None:
        while self.closers:
            self.closers.pop()()


def state_of(app: Starlette) -> AppState:
    state = app.state.signoff
    assert isinstance(state, AppState)
    return state
