"""The live feed: a tenant's notification events after a sequence number, from the audit chain.

The confirmation page's inbox follows it over server-sent events; the event
id is the audit ``seq``, so a reconnecting browser resumes where it stopped.
It says only that something happened and what kind — the page then asks for
its own content, which applies every read rule as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from signoff.notify._events import event_type_of
from signoff.store._base import Store


@dataclass(frozen=True, slots=True)
class FeedEvent:
    seq: int
    event_type: str


def head(store: Store, tenant: str) -> int:
    """The tenant's last audit seq (0 before its first event)."""
    with store.read() as tx:
        seq, _ = tx.audit_heads().get(tenant, (0, ""))
    return seq


def events_after(
    store: Store,
    tenant: str,
    seq: int,
    *,
    limit: int = 100,
    may_see: Callable[[str], bool] | None = None,
) -> tuple[int, list[FeedEvent]]:
    """Notification events after ``seq`` and the seq to continue from (past skipped kinds too).

    ``may_see(proposal_id)``: only events about proposals the follower may see are fed
    (their circle, PROTOCOL rule 12); even the kind and seq of others' events say too much.
    """
    with store.read() as tx:
        events = tx.audit_events_after(tenant, seq, limit)
    feed = []
    for event in events:
        event_type = event_type_of(event.kind)
        if event_type is None:
            continue
        if may_see is not None and (event.proposal_id is None or not may_see(event.proposal_id)):
            continue
        feed.append(FeedEvent(event.seq, event_type))
    return (events[-1].seq if events else seq), feed
