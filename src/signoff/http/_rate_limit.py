"""Per-agent rate limit on proposals (the `limits` library, moving window).

An agent in a loop can flood people's inboxes; each (tenant, person, agent) may
make ``SIGNOFF_PROPOSAL_RATE_LIMIT`` proposals (e.g. ``600/minute``), then gets
``429 rate_limited`` with ``Retry-After``. The key is the JCS array
``[subject, agent-or-null]`` (as for idempotency keys): one person's agent never
spends another person's budget, and an agent named ``alice`` never shares the
person alice's counter. Agent ids come from the identity token (``act``), so an
agent cannot mint itself a fresh budget unless its identity provider lets it.
The counters live in each worker process (``memory://``) unless
``SIGNOFF_RATE_LIMIT_STORAGE`` names a shared store that `limits` supports
(e.g. ``redis://…`` with its client installed).

In-process (``memory://``) the window is kept here, the last hits of each agent
in a deque: `limits`' memory storage starts a timer thread after any hit that
comes more than 10 ms after the previous one, which costs a proposal 0.1–2 ms
on a busy two-core machine (docs/PERFORMANCE.md). The rate is still parsed by
`limits`, and every shared store goes through it.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque

from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from signoff._canonical import canonical_json
from signoff._model import Principal
from signoff.exceptions import RateLimited

NAMESPACE = "signoff-proposals"
LOCAL = "memory://"
SWEEP_AT = 10_000
"""Agents remembered before those idle for a whole window are forgotten."""


class ProposalRateLimit:
    """Counts proposals per (tenant, agent); ``rate=None`` turns the limit off."""

    def __init__(self, rate: str | None, *, storage: str = "memory://") -> None:
        self.rate = rate
        self._item: RateLimitItem | None = parse(rate) if rate else None
        self._local = _LocalWindow(self._item) if self._item and storage == LOCAL else None
        self._limiter = (
            None if self._local else MovingWindowRateLimiter(storage_from_string(storage))
        )

    def check(self, principal: Principal) -> None:
        if self._item is None:
            return
        who = principal.actor or principal.subject
        key = canonical_json([principal.subject, principal.actor]).decode()
        wait = self._wait(self._item, principal.tenant, key)
        if wait is None:
            return
        retry_after = max(1, math.ceil(wait))
        raise RateLimited(
            f"{who} made more than {self.rate} proposals — wait {retry_after} s before the next",
            retry_after_seconds=retry_after,
        )

    def _wait(self, item: RateLimitItem, tenant: str, who: str) -> float | None:
        """None once this proposal is counted; else seconds until one more is allowed."""
        if self._local is not None:
            return self._local.hit((tenant, who), time.monotonic())
        assert self._limiter is not None
        if self._limiter.hit(item, NAMESPACE, tenant, who):
            return None
        stats = self._limiter.get_window_stats(item, NAMESPACE, tenant, who)
        return stats.reset_time - time.time()


class _LocalWindow:
    """A moving window per (tenant, agent) in this process: the times of its last hits."""

    def __init__(self, item: RateLimitItem) -> None:
        self._limit = item.amount
        self._seconds = float(item.get_expiry())
        self._hits: dict[tuple[str, str], deque[float]] = {}
        self._lock = threading.Lock()

    def hit(self, key: tuple[str, str], now: float) -> float | None:
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - self._seconds:
                hits.popleft()
            if len(hits) >= self._limit:
                return hits[0] + self._seconds - now
            hits.append(now)
            if len(self._hits) > SWEEP_AT:
                self._sweep(now)
            return None

    def _sweep(self, now: float) -> None:
        idle = [k for k, hits in self._hits.items() if hits[-1] <= now - self._seconds]
        for key in idle:
            del self._hits[key]
