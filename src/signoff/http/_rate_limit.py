"""Per-agent rate limit on proposals (the `limits` library, moving window).

An agent in a loop can flood people's inboxes; each (tenant, agent) may make
``SIGNOFF_PROPOSAL_RATE_LIMIT`` proposals (e.g. ``600/minute``), then gets
``429 rate_limited`` with ``Retry-After``. A person proposing without an agent
is counted under their own subject. The counters live in each worker process
(``memory://``) unless ``SIGNOFF_RATE_LIMIT_STORAGE`` names a shared store
that `limits` supports (e.g. ``redis://…`` with its client installed).
"""

from __future__ import annotations

import math
import time

from limits import RateLimitItem, parse
from limits.storage import storage_from_string
from limits.strategies import MovingWindowRateLimiter

from signoff._model import Principal
from signoff.exceptions import RateLimited

NAMESPACE = "signoff-proposals"


class ProposalRateLimit:
    """Counts proposals per (tenant, agent); ``rate=None`` turns the limit off."""

    def __init__(self, rate: str | None, *, storage: str = "memory://") -> None:
        self.rate = rate
        self._item: RateLimitItem | None = parse(rate) if rate else None
        self._limiter = MovingWindowRateLimiter(storage_from_string(storage))

    def check(self, principal: Principal) -> None:
        if self._item is None:
            return
        who = principal.actor or principal.subject
        if self._limiter.hit(self._item, NAMESPACE, principal.tenant, who):
            return
        stats = self._limiter.get_window_stats(self._item, NAMESPACE, principal.tenant, who)
        retry_after = max(1, math.ceil(stats.reset_time - time.time()))
        raise RateLimited(
            f"{who} made more than {self.rate} proposals — wait {retry_after} s before the next",
            retry_after_seconds=retry_after,
        )
