"""Hash chaining and verification of audit events.

Each tenant has one chain: event ``n`` stores ``prev_hash`` (the hash of event
``n-1``, or 64 zeros) and ``hash = sha256(JCS(event fields + prev_hash))``.
The fields include the event's authenticator ``mac`` when it has one (events
written before authenticators existed have none, and hash as they always did).
Editing a row breaks its hash; deleting or reordering breaks a link or leaves
a gap; truncating the tail disagrees with the chain head kept per tenant.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from signoff._canonical import canonical_flat, sha256_hex

GENESIS = "0" * 64


@dataclass(frozen=True, slots=True)
class AuditEvent:
    tenant: str
    seq: int
    at: int
    kind: str
    proposal_id: str | None
    execution_id: str | None
    actor: str | None
    data: str
    prev_hash: str
    hash: str
    mac: str | None = None

    def payload(self) -> dict[str, Any]:
        return json.loads(self.data)  # type: ignore[no-any-return]

    def recomputed_hash(self) -> str:
        """The hash this event's fields give now (equal to ``hash`` unless edited)."""
        return event_hash(
            tenant=self.tenant,
            seq=self.seq,
            at=self.at,
            kind=self.kind,
            proposal_id=self.proposal_id,
            execution_id=self.execution_id,
            actor=self.actor,
            data=self.data,
            prev_hash=self.prev_hash,
            mac=self.mac,
        )


def event_hash(
    *,
    tenant: str,
    seq: int,
    at: int,
    kind: str,
    proposal_id: str | None,
    execution_id: str | None,
    actor: str | None,
    data: str,
    prev_hash: str,
    mac: str | None = None,
) -> str:
    document: dict[str, str | int | None] = {
        "tenant": tenant,
        "seq": seq,
        "at": at,
        "kind": kind,
        "proposal_id": proposal_id,
        "execution_id": execution_id,
        "actor": actor,
        "data": data,
        "prev_hash": prev_hash,
    }
    if mac is not None:
        document["mac"] = mac
    return sha256_hex(canonical_flat(document))


@dataclass(frozen=True, slots=True)
class ChainReport:
    ok: bool
    events: int
    tenants: int
    first_bad: str | None = None


def verify_chain(events: Iterable[AuditEvent], heads: dict[str, tuple[int, str]]) -> ChainReport:
    """Check every tenant's chain; ``events`` ordered by (tenant, seq)."""
    count = 0
    last: dict[str, tuple[int, str]] = {}
    for event in events:
        count += 1
        seq, prev = last.get(event.tenant, (0, GENESIS))
        where = f"tenant {event.tenant!r} event #{event.seq} ({event.kind})"
        if event.seq != seq + 1:
            return ChainReport(False, count, len(last), f"{where}: expected #{seq + 1}, gap")
        if event.prev_hash != prev:
            return ChainReport(False, count, len(last), f"{where}: link to previous broken")
        if event.recomputed_hash() != event.hash:
            return ChainReport(False, count, len(last), f"{where}: content edited")
        last[event.tenant] = (event.seq, event.hash)
    for tenant, head in heads.items():
        if last.get(tenant) != head:
            have = last.get(tenant, (0, GENESIS))[0]
            return ChainReport(
                False,
                count,
                len(last),
                f"tenant {tenant!r}: head is #{head[0]}, chain ends at #{have}",
            )
    for tenant in last:
        if tenant not in heads:
            return ChainReport(False, count, len(last), f"tenant {tenant!r}: no chain head")
    return ChainReport(True, count, len(last))
