"""The follow-up loop: ``Gate.follow_up`` every few seconds, beside the reconciler.

Reminders, escalations and expiries are single-winner rows, so every worker of
``signoff serve`` (and any number of servers on one store) may run the loop: a step
is taken, audited and notified once, by whichever worker wins it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from signoff.exceptions import StoreUnavailable
from signoff.gate._context import log
from signoff.gate._followups import FollowupPass
from signoff.gate._reconciler import DaemonLoop

if TYPE_CHECKING:
    from signoff.gate._gate import Gate


class FollowupLoop(DaemonLoop):
    """Take due reminders, escalations and expiries until stopped (a daemon thread)."""

    thread_name = "signoff-followups"
    what = "follow-up loop"

    def __init__(
        self,
        gate: Gate,
        *,
        interval: timedelta = timedelta(seconds=5),
        limit: int = 100,
        on_pass: Callable[[FollowupPass], None] | None = None,
    ) -> None:
        if limit < 1 or interval <= timedelta(0):
            raise ValueError("limit ≥ 1 and interval > 0 are required")
        self.gate = gate
        self.interval = interval
        self.limit = limit
        self._on_pass = on_pass
        super().__init__()

    def run_once(self) -> FollowupPass:
        done = self.gate.follow_up(limit=self.limit)
        if self._on_pass is not None:
            self._on_pass(done)
        return done

    def run(self, stop: threading.Event | None = None) -> None:
        stop = stop or self._stop
        while not stop.is_set():
            try:
                self.run_once()
            except StoreUnavailable as exc:
                log.warning("follow-ups: store unavailable, trying again later: %s", exc)
            except Exception:
                # Outlive one bad pass; nothing was claimed without its event, so nothing is lost.
                log.exception("follow-ups: pass failed; trying again after the interval")
            stop.wait(self.interval.total_seconds())
