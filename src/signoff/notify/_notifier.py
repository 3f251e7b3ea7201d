"""The notifier: read the audit chain after each destination's cursor, deliver, retry, dead-letter.

The audit chain is the outbox: every state change appends its event in the
transaction that makes the change, so an event exists exactly when its change
committed. ``enqueue`` turns the events after a destination's cursor into
delivery rows and moves the cursor, in one transaction; ``deliver_due``
leases due rows (a conditional update, so several notifiers never send one row
at once), sends outside any transaction, and records the outcome only while
its lease holds. A kill at any point loses nothing: an event not yet enqueued
is still after the cursor; a row sent but not marked is sent again when its
lease lapses, under the same ``webhook-id``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from signoff._clock import Clock, SystemClock, to_micros
from signoff._model import Proposal
from signoff._telemetry import from_event, span
from signoff.audit._chain import AuditEvent
from signoff.notify._channel import Channel, DeliveryFailed
from signoff.notify._events import event_type_of, notification
from signoff.store._base import Store
from signoff.store._q_deliveries import INITIALIZED, DeliveryRecord
from signoff.store._q_followups import Assignment
from signoff.store._sql import SqlTransaction

log = logging.getLogger("signoff.notify")
MAX_ERROR = 500


@dataclass(frozen=True, slots=True)
class Backoff:
    """Delay before attempt n+1: ``first * 2**(n-1)``, at most ``cap``."""

    first: timedelta = timedelta(seconds=5)
    cap: timedelta = timedelta(hours=1)

    def after(self, attempts: int) -> timedelta:
        delay: timedelta = self.first * (2 ** max(0, attempts - 1))
        return min(self.cap, delay)


class Notifier:
    """Deliver audit events to ``channels``; run it as ``signoff notify`` or a thread.

    ``lease`` is how long a row being sent is kept from other notifiers (and from
    this one after a crash): make it longer than a channel's timeout.
    """

    def __init__(
        self,
        store: Store,
        channels: Sequence[Channel],
        *,
        public_url: str,
        clock: Clock | None = None,
        backoff: Backoff | None = None,
        lease: timedelta = timedelta(seconds=60),
        batch: int = 100,
    ) -> None:
        names = [c.destination for c in channels]
        if len(set(names)) != len(names):
            raise ValueError(f"destination names must be unique: {names}")
        self.store = store
        self.channels = {c.destination: c for c in channels}
        self.public_url = public_url
        self.clock = clock or SystemClock()
        self.backoff = backoff or Backoff()
        self.lease = lease
        self.batch = batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def run_once(self) -> int:
        """Enqueue what is new for every destination, then deliver what is due; returns sent."""
        for channel in self.channels.values():
            self.enqueue(channel)
        return self.deliver_due()

    def enqueue(self, channel: Channel) -> int:
        """New audit events after the cursor → delivery rows; the cursor moves in the same step."""
        now = to_micros(self.clock.now())
        with self.store.transaction() as tx:
            cursors = tx.notify_cursors(channel.destination)
            heads = tx.audit_heads()
            if INITIALIZED not in cursors:
                # A new destination hears what happens from now on, not the whole history.
                for tenant, (seq, _) in heads.items():
                    tx.set_notify_cursor(channel.destination, tenant, seq)
                tx.set_notify_cursor(channel.destination, INITIALIZED, 0)
                return 0
            return sum(
                self._enqueue_tenant(tx, channel, tenant, cursors.get(tenant, 0), now)
                for tenant, (head, _) in heads.items()
                if head > cursors.get(tenant, 0)
            )

    def _enqueue_tenant(
        self, tx: SqlTransaction, channel: Channel, tenant: str, after: int, now: int
    ) -> int:
        events = tx.audit_events_after(tenant, after, self.batch)
        queued = 0
        for event in events:
            event_type = event_type_of(event.kind)
            if event_type is not None and channel.accepts(event_type, tenant):
                tx.insert_delivery(channel.destination, tenant, event.seq, event_type, now)
                queued += 1
        if events:
            tx.set_notify_cursor(channel.destination, tenant, events[-1].seq)
        return queued

    def deliver_due(self) -> int:
        """Send due rows one by one, each leased just before it is sent; returns delivered."""
        delivered = 0
        for _ in range(self.batch):
            now = self.clock.now()
            lease_until = to_micros(now + self.lease)
            with self.store.transaction() as tx:
                claimed = tx.claim_deliveries(list(self.channels), to_micros(now), lease_until, 1)
            if not claimed:
                break
            delivered += self._deliver(claimed[0], lease_until)
        return delivered

    def _deliver(self, record: DeliveryRecord, lease_until: int) -> bool:
        channel = self.channels[record.destination]
        attempts = record.attempts + 1
        event, proposal, assignment = self._read(record)
        # The delivery joins the trace of the step that appended its event (when it was traced).
        with span(
            "signoff.notify.deliver",
            parent=None if event is None else from_event(event.payload()),
            destination=record.destination,
            event_type=record.event_type,
            attempt=attempts,
            proposal_id=None if event is None else event.proposal_id,
            execution_id=None if event is None else event.execution_id,
        ) as delivery:
            error = self._send(channel, record, event, proposal, assignment)
            delivery.set(outcome="delivered" if error is None else "failed")
        now = self.clock.now()
        if error is None:
            status, due = "delivered", now
        elif attempts >= channel.max_attempts:
            status, due = "dead", now
            log.warning(
                "%s: event %s/%s is dead: %s", record.destination, record.tenant, record.seq, error
            )
        else:
            status, due = "pending", now + self.backoff.after(attempts)
        with self.store.transaction() as tx:
            tx.finish_delivery(
                record,
                lease_until=lease_until,
                status=status,
                attempts=attempts,
                next_attempt_at=to_micros(due),
                last_error=error,
                now=to_micros(now),
            )
        return error is None

    def _send(
        self,
        channel: Channel,
        record: DeliveryRecord,
        event: AuditEvent | None,
        proposal: Proposal | None,
        assignment: Assignment | None,
    ) -> str | None:
        """Send one delivery; the error to record, or None when it was delivered."""
        try:
            if event is None:
                raise DeliveryFailed("the audit event is missing")
            sent = notification(event, record.event_type, proposal, self.public_url, assignment)
            channel.send(sent, self.clock.now())
        except DeliveryFailed as exc:
            return str(exc)[:MAX_ERROR]
        except Exception as exc:
            # A channel that fails in a way it did not foresee has still failed this attempt:
            # the row is retried and dead-lettered like any other, and the pass goes on.
            log.exception(
                "%s: sending event %s/%s failed", record.destination, record.tenant, record.seq
            )
            return f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
        return None

    def _read(
        self, record: DeliveryRecord
    ) -> tuple[AuditEvent | None, Proposal | None, Assignment | None]:
        with self.store.read() as tx:
            event = tx.audit_event(record.tenant, record.seq)
            if event is None or event.proposal_id is None:
                return event, None, None
            proposal = tx.proposal(record.tenant, event.proposal_id)
            assignment = tx.assignment(record.tenant, event.proposal_id)
        return event, proposal, assignment

    def run(self, stop: threading.Event | None = None, *, interval: float = 1.0) -> None:
        """Pass after pass until ``stop`` is set; a full batch goes again at once."""
        stop = stop or self._stop
        while not stop.is_set():
            try:
                sent = self.run_once()
            except Exception:
                # A long-running notifier outlives one bad pass; its leases lapse and return.
                log.exception("notifier: pass failed; trying again after the interval")
                sent = 0
            if sent < self.batch:
                stop.wait(interval)

    def start(self, *, interval: float = 1.0) -> None:
        if self._thread is not None:
            raise RuntimeError("this notifier is already running")
        self._stop.clear()
        self._thread = threading.Thread(
            target=self.run, kwargs={"interval": interval}, name="signoff-notifier", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def close(self) -> None:
        self.stop()
        for channel in self.channels.values():
            channel.close()
