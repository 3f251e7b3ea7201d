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
    """Hex SHA-256 of the JCS form of the event's fields (PROOF-FORMAT.md section 2)."""
    plain = (
        _text(tenant, kind, data, prev_hash)
        and _text_or_none(proposal_id, execution_id, actor, mac)
        and _safe_int(seq)
        and _safe_int(at)
    )
    if plain:
        # The JCS text written directly, members in their code-point order: a string
        # is JSON's own escape of it (RFC 8785's for str), an int its decimal digits.
        signed = "" if mac is None else '"mac":' + _STRING(mac) + ","
        text = (
            f'{{"actor":{_json(actor)},"at":{at},"data":{_STRING(data)},'
            f'"execution_id":{_json(execution_id)},"kind":{_STRING(kind)},{signed}'
            f'"prev_hash":{_STRING(prev_hash)},"proposal_id":{_json(proposal_id)},'
            f'"seq":{seq},"tenant":{_STRING(tenant)}}}'
        )
        try:
            return sha256_hex(text.encode("utf-8"))
        except UnicodeEncodeError:
            pass  # a lone surrogate: refused below, as canonical_json refuses it
    return _document_hash(
        tenant=tenant, seq=seq, at=at, kind=kind, proposal_id=proposal_id,
        execution_id=execution_id, actor=actor, data=data, prev_hash=prev_hash, mac=mac,
    )  # fmt: skip


def _document_hash(
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
    mac: str | None,
) -> str:
    """The hash through :func:`canonical_flat` (any other value: its checks and refusals)."""
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


def _text(*values: object) -> bool:
    return all(type(value) is str for value in values)


def _text_or_none(*values: object) -> bool:
    return all(value is None or type(value) is str for value in values)


def _safe_int(value: object) -> bool:
    return type(value) is int and _SAFE_MIN <= value <= _SAFE_MAX


def _json(value: str | None) -> str:
    return "null" if value is None else _STRING(value)


_STRING = json.encoder.encode_basestring  # JSON's escapes, non-ASCII kept: JCS for a str
_SAFE_MIN, _SAFE_MAX = -(2**53) + 1, 2**53 - 1


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
