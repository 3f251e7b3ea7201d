"""A reconciler loop: ``Gate.reconcile`` every few seconds, as a process or a background thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from signoff.exceptions import StoreUnavailable
from signoff.gate._context import log
from signoff.gate._reconcile import Reconciled

if TYPE_CHECKING:
    from signoff.gate._gate import Gate


class DaemonLoop:
    """``start()`` runs ``run(stop)`` in a daemon thread until ``stop()``; the loops of
    ``signoff serve`` (the reconciler, the follow-ups) share it."""

    thread_name = "signoff-loop"
    what = "loop"

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run(self, stop: threading.Event | None = None) -> None:
        raise NotImplementedError

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError(f"this {self.what} is already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self.run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


class ReconcileLoop(DaemonLoop):
    """Reconcile stuck executions until stopped.

    ``ReconcileLoop(gate).start()`` runs it in a daemon thread (for example
    inside ``signoff serve``); ``run(stop)`` runs it in the calling thread
    (``signoff reconcile``). Several loops, in as many processes as you like,
    may run against one store: each execution is claimed by one of them.
    """

    thread_name = "signoff-reconciler"
    what = "reconcile loop"

    def __init__(
        self,
        gate: Gate,
        *,
        interval: timedelta = timedelta(seconds=10),
        older_than: timedelta = timedelta(seconds=60),
        limit: int = 100,
        on_pass: Callable[[list[Reconciled]], None] | None = None,
    ) -> None:
        if limit < 1 or interval <= timedelta(0) or older_than < timedelta(0):
            raise ValueError("limit ≥ 1, interval > 0 and older_than ≥ 0 are required")
        self.gate = gate
        self.interval = interval
        self.older_than = older_than
        self.limit = limit
        self._on_pass = on_pass
        super().__init__()

    def run_once(self) -> list[Reconciled]:
        """One pass: claim up to ``limit`` stuck executions and settle them."""
        done = self.gate.reconcile(older_than=self.older_than, limit=self.limit)
        if self._on_pass is not None:
            self._on_pass(done)
        return done

    def run(self, stop: threading.Event | None = None) -> None:
        """Pass after pass until ``stop`` is set; a full pass goes again at once."""
        stop = stop or self._stop
        while not stop.is_set():
            try:
                done = self.run_once()
            except StoreUnavailable as exc:
                log.warning("reconciler: store unavailable, trying again later: %s", exc)
                done = []
            except Exception:
                # A long-running worker outlives one bad pass (a deadlock victim, a driver
                # error); its claims lapse and the next pass takes them again.
                log.exception("reconciler: pass failed; trying again after the interval")
                done = []
            if len(done) < self.limit:
                stop.wait(self.interval.total_seconds())
