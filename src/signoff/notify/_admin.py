"""What an admin does with deliveries: list them (the dead letters) and replay one."""

from __future__ import annotations

from signoff._clock import Clock, to_micros
from signoff.exceptions import InvalidState, NotFound
from signoff.store._base import Store
from signoff.store._q_deliveries import DeliveryRecord


def list_deliveries(
    store: Store, tenant: str, *, status: str | None = None, limit: int = 100
) -> list[DeliveryRecord]:
    with store.read() as tx:
        return tx.deliveries(tenant, status=status, limit=limit)


def replay(
    store: Store, clock: Clock, tenant: str, destination: str, seq: int, *, by: str
) -> DeliveryRecord:
    """A dead delivery is sent again with a fresh attempt budget, under the same event id.

    The replay is an audit event of the tenant's chain (``delivery.replayed``, by whom),
    written in the same transaction.
    """
    now = to_micros(clock.now())
    with store.transaction() as tx:
        current = tx.delivery(destination, tenant, seq)
        if current is None:
            raise NotFound("no such delivery", destination=destination, seq=seq)
        if not tx.replay_delivery(destination, tenant, seq, now):
            raise InvalidState(
                f"only a dead delivery can be replayed; this one is {current.status}",
                destination=destination,
                seq=seq,
                status=current.status,
            )
        tx.append_audit(
            tenant=tenant,
            at=now,
            kind="delivery.replayed",
            actor=by,
            data={"destination": destination, "audit_seq": seq, "attempts": current.attempts},
        )
        replayed = tx.delivery(destination, tenant, seq)
    assert replayed is not None
    return replayed
