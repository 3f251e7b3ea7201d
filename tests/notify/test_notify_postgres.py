"""On PostgreSQL: notifiers in parallel, each with its own pool, send every event once."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest

from signoff import Gate, ManualClock
from signoff.demo import DemoShop, demo_catalog, seed_demo_orders
from signoff.notify import Notifier
from signoff.store._postgres import PostgresStore
from tests.conftest import AGENT, TOKEN_KEY
from tests.notify.conftest import PUBLIC_URL, Receiver, webhook
from tests.pg import fresh_schema

pytestmark = pytest.mark.postgres
NOTIFIERS = 3
EVENTS = 30


def test_parallel_notifiers_deliver_each_event_exactly_once(
    receiver: Receiver, clock: ManualClock
) -> None:
    """Leases are single-winner: three notifiers, thirty events, thirty accepted requests."""
    with fresh_schema("notify") as url:
        store = PostgresStore(url, max_size=2)
        store.migrate()
        shop = DemoShop(url)
        seed_demo_orders(shop)
        stores = [PostgresStore(url, max_size=2) for _ in range(NOTIFIERS)]
        try:
            gate = Gate(demo_catalog(shop), store, token_key=TOKEN_KEY)
            notifiers = [
                Notifier(s, [webhook(receiver)], public_url=PUBLIC_URL, clock=clock) for s in stores
            ]
            notifiers[0].run_once()
            for i in range(EVENTS):
                gate.propose(AGENT, "add_order_note", {"order_id": "ord_1001", "note": f"{i}"})
            start = threading.Barrier(NOTIFIERS)

            def work(notifier: Notifier) -> None:
                start.wait()
                for _ in range(5):
                    notifier.run_once()

            threads = [threading.Thread(target=work, args=(n,)) for n in notifiers]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            clock.advance(timedelta(minutes=10))
            assert sum(n.run_once() for n in notifiers) == 0
            accepted = Counter(receiver.accepted_ids())
            assert len(accepted) == EVENTS and set(accepted.values()) == {1}
            with store.read() as tx:
                assert {d.status for d in tx.deliveries("acme", limit=500)} == {"delivered"}
        finally:
            for s in (*stores, store):
                s.close()
            shop.close()
