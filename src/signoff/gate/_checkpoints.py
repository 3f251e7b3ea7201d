"""The signer: checkpoints each tenant's audit tree, only as an extension of what it signed.

When a log is due (every N events, every T seconds, after each execution) the
signer takes that log's entry in its own state (outside the store, under a
lock), reads the events after the size it last signed and checks, before
signing anything, that:

- the log did not shrink and still holds the event it signed last (same hash);
- the new events link to that one and to each other, and their hashes recompute;
- each new event carries a valid MAC from the gate's key and no MAC twice
  (an event a database writer appended or replayed is never covered).

It then folds the new events onto its own frontier (so the new tree extends
the old by construction), signs the root with its time, saves the new view
atomically, stores the checkpoint row, and asks the configured witnesses to
cosign. A log that fails a check is refused (``checkpoint_inconsistent``,
``event_unauthenticated``, ``signer_state_missing``): logged, counted
(``GateProof.on_refusal``), and recorded once as a ``checkpoint.refused``
audit event. Events before an unauthenticated one are still covered.
Checkpointing never turns a committed write into an error. ``signoff.proof``
is imported on first use, so ``import signoff`` stays light.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from signoff.audit._chain import AuditEvent
from signoff.exceptions import (
    CheckpointInconsistent,
    EventUnauthenticated,
    SignerRefused,
    SignerStateMissing,
    StoreError,
)
from signoff.store._sql import CheckpointRecord, audit_entry

if TYPE_CHECKING:
    from signoff.gate._context import GateContext
    from signoff.proof._signer_state import LogSlot, SignedView

log = logging.getLogger("signoff.proof")
MICROS = 1_000_000
REFUSED_KIND = "checkpoint.refused"


@dataclass(frozen=True, slots=True)
class _Plan:
    """What the signer may cover now: the events after its view, up to the first bad one."""

    events: list[AuditEvent]
    refusal: SignerRefused | None


def checkpoint(ctx: GateContext, tenant: str, *, adopt: bool = False) -> CheckpointRecord | None:
    """Sign the tenant's tree at its head (or return the checkpoint already there).

    Raises a :class:`SignerRefused` when the log does not extend what the signer
    signed last, or holds an event the gate did not write (after covering the
    events before it). ``adopt`` (``signoff audit init-signer --adopt-head``)
    also covers events without an authenticator: an operator vouches for them.
    """
    proof = ctx.proof
    assert proof is not None
    origin = proof.origin(tenant)
    with proof.signer.hold(origin) as slot:
        view, latest, plan = _plan(ctx, tenant, origin, slot, adopt=adopt)
        record = _sign(ctx, tenant, view, plan.events, slot) if plan.events else None
    if record is not None:
        with proof.state.lock:
            proof.state.last[tenant] = (record.size, record.created_at)
        record = _witness(ctx, record, view.size)
    if plan.refusal is not None:
        raise plan.refusal
    if record is None and latest is not None and latest.size == view.size:
        return latest
    return record


def _plan(
    ctx: GateContext, tenant: str, origin: str, slot: LogSlot, *, adopt: bool
) -> tuple[SignedView, CheckpointRecord | None, _Plan]:
    from signoff.proof._signer_state import SignedView

    proof = ctx.proof
    assert proof is not None
    with ctx.store.read() as tx:
        head = tx.audit_head_seq(tenant)
        latest = tx.latest_checkpoint(tenant)
        view = slot.view
        if view is None:
            if latest is not None and latest.note.startswith(origin + "\n"):
                raise SignerStateMissing(
                    f"the store holds checkpoints of {origin} up to #{latest.size} that this"
                    f" signer has no record of ({proof.signer.describe()}) — restore the signer"
                    " state, or re-initialise it with `signoff audit init-signer` (audited)",
                    tenant=tenant,
                )
            view = SignedView.empty(origin)  # a log this signer never signed: first use
        if head < view.size:
            raise CheckpointInconsistent(
                f"{origin}: the log ends at #{head}, but the signer signed {view.size} events"
                " — events were deleted; nothing more is signed until this is investigated",
                tenant=tenant,
                seq=head,
            )
        first = max(view.size, 1)
        events = tx.audit_events(tenant=tenant, after=first - 1, upto=head)
        fresh = [e.mac for e in events if e.seq > view.size and e.mac is not None]
        replayed = set(tx.macs_before(tenant, fresh, view.size + 1)) if fresh else set()
    if view.size and (not events or events[0].seq != view.size or events[0].hash != view.head):
        raise CheckpointInconsistent(
            f"{origin}: event #{view.size} is not the one the signer signed — the log was"
            " rewritten; nothing more is signed until this is investigated",
            tenant=tenant,
            seq=view.size,
        )
    new = [e for e in events if e.seq > view.size]
    return view, latest, _check(ctx, tenant, view, new, replayed, adopt=adopt)


def _check(
    ctx: GateContext,
    tenant: str,
    view: SignedView,
    new: list[AuditEvent],
    replayed: set[str],
    *,
    adopt: bool,
) -> _Plan:
    proof = ctx.proof
    assert proof is not None
    authenticator = proof.authenticator
    prev, expected = view.head, view.size + 1
    seen: set[str] = set()
    for index, event in enumerate(new):
        linked = event.seq == expected and event.prev_hash == prev
        if not linked or event.recomputed_hash() != event.hash:
            raise CheckpointInconsistent(
                f"{view.origin}: event #{expected} is missing, unlinked or edited"
                " — the log was changed behind the gate",
                tenant=tenant,
                seq=expected,
            )
        reason = None if adopt and event.mac is None else authenticator.check(event)
        if (
            reason is None
            and event.mac is not None
            and (event.mac in seen or event.mac in replayed)
        ):
            reason = "it repeats another event's authenticator (a replay)"
        if reason is not None:
            refusal = EventUnauthenticated(
                f"{view.origin}: event #{event.seq} ({event.kind}) was not written by this"
                f" gate: {reason} — it and every later event stay unsigned",
                tenant=tenant,
                seq=event.seq,
            )
            return _Plan(new[:index], refusal)
        if event.mac is not None:
            seen.add(event.mac)
        prev, expected = event.hash, expected + 1
    return _Plan(new, None)


def _sign(
    ctx: GateContext, tenant: str, view: SignedView, events: list[AuditEvent], slot: LogSlot
) -> CheckpointRecord:
    from signoff.proof import Checkpoint, CompactTree, leaf_hash, sign_checkpoint
    from signoff.proof._signer_state import SignedView

    proof = ctx.proof
    assert proof is not None
    tree = CompactTree(view.frontier, view.size)
    for event in events:
        tree.append(leaf_hash(bytes.fromhex(event.hash)))
    now = ctx.now_micros()
    root, size = tree.root(), tree.size
    note = sign_checkpoint(
        proof.keys.note_key(), Checkpoint(view.origin, size, root), timestamp=now // MICROS
    )
    frontier = tuple(tree.frontier())
    # Remember first: the signer never signs a tree it could forget. A row the store then
    # fails to keep is only a gap between stored checkpoints; the next one extends this.
    slot.save(SignedView(view.origin, size, root, events[-1].hash, frontier, now // MICROS))
    record = CheckpointRecord(
        tenant=tenant,
        size=size,
        root=base64.b64encode(root).decode(),
        frontier=tuple(base64.b64encode(h).decode() for h in frontier),
        note=note,
        created_at=now,
    )
    with ctx.store.transaction() as tx:
        tx.insert_checkpoint(record)
    return record


def _witness(ctx: GateContext, record: CheckpointRecord, previous: int) -> CheckpointRecord:
    """Ask each witness to cosign (resynchronising on 409); keep what they return."""
    from signoff.gate._witnessing import cosign

    proof = ctx.proof
    assert proof is not None
    if not proof.witnesses:
        return record
    return cosign(ctx, record, previous)


def after_write(ctx: GateContext, appended: Mapping[str, int]) -> None:
    """Checkpoint each tenant whose new events reach the count or the age limit."""
    if ctx.proof is None or not appended:
        return
    now = ctx.now_micros()
    for tenant, head in appended.items():

        def if_due(tenant: str = tenant, head: int = head) -> None:
            if _is_due(ctx, tenant, head, now):
                checkpoint(ctx, tenant)

        _quietly(ctx, tenant, if_due)


def checkpoint_due(ctx: GateContext) -> list[CheckpointRecord]:
    """Checkpoint every tenant whose uncovered events reach the count or the age limit.

    The age limit is otherwise checked only when a tenant writes again: this pass
    (``signoff serve`` runs it every ``checkpoint_seconds``) covers the last events
    of a log that went quiet.
    """
    if ctx.proof is None:
        return []
    now = ctx.now_micros()
    with ctx.store.read() as tx:
        heads = {tenant: seq for tenant, (seq, _) in tx.audit_heads().items()}
    made: list[CheckpointRecord] = []
    for tenant, head in sorted(heads.items()):

        def if_due(tenant: str = tenant, head: int = head) -> None:
            if _is_due(ctx, tenant, head, now):
                record = checkpoint(ctx, tenant)
                if record is not None:
                    made.append(record)

        _quietly(ctx, tenant, if_due)
    return made


def _is_due(ctx: GateContext, tenant: str, head: int, now: int) -> bool:
    proof = ctx.proof
    assert proof is not None
    size, made_at = _last(ctx, tenant)
    fresh = head - size
    too_old = now - made_at >= proof.checkpoint_seconds * MICROS
    return fresh >= proof.checkpoint_events or (fresh > 0 and too_old)


def checkpoint_quietly(ctx: GateContext, tenant: str) -> None:
    _quietly(ctx, tenant, lambda: checkpoint(ctx, tenant))


def _quietly(ctx: GateContext, tenant: str, action: Callable[[], object]) -> None:
    retryable: tuple[type[BaseException], ...] = (
        StoreError,
        *ctx.store.transient_errors,
        *ctx.store.integrity_errors,
    )
    if _backing_off(ctx, tenant):
        return
    try:
        action()
    except SignerRefused as refusal:
        report_refusal(ctx, tenant, refusal)
    except retryable:
        log.warning("checkpoint of tenant %s failed; the next write tries again", tenant)


def _backing_off(ctx: GateContext, tenant: str) -> bool:
    """After a refusal, the next attempt waits ``checkpoint_seconds`` (not every write)."""
    proof = ctx.proof
    assert proof is not None
    with proof.state.lock:
        refused = proof.state.refused.get(tenant)
    return refused is not None and ctx.now_micros() - refused[1] < proof.checkpoint_seconds * MICROS


def report_refusal(ctx: GateContext, tenant: str, refusal: SignerRefused) -> None:
    """Log and count every refusal; record it in the tenant's log once per (code, event)."""
    proof = ctx.proof
    assert proof is not None
    log.error("signer refused tenant %s: [%s] %s", tenant, refusal.code, refusal.message)
    if proof.on_refusal is not None:
        proof.on_refusal(refusal)
    key = f"{refusal.code}:{refusal.details.get('seq')}"
    now = ctx.now_micros()
    with proof.state.lock:
        known = proof.state.refused.get(tenant)
        proof.state.refused[tenant] = (key, now)
    if known is not None and known[0] == key:
        return
    event = audit_entry(
        tenant=tenant,
        at=now,
        kind=REFUSED_KIND,
        data={"code": refusal.code, "seq": refusal.details.get("seq"), "reason": refusal.message},
    )
    failures: tuple[type[BaseException], ...] = (
        StoreError,
        *ctx.store.transient_errors,
        *ctx.store.integrity_errors,
    )
    try:
        with ctx.store.transaction() as tx:  # not ctx.write: no checkpoint after this one
            tx.append(event)
    except failures:
        log.warning("could not record the signer's refusal for tenant %s", tenant)


def _last(ctx: GateContext, tenant: str) -> tuple[int, int]:
    proof = ctx.proof
    assert proof is not None
    with proof.state.lock:
        known = proof.state.last.get(tenant)
    if known is not None:
        return known
    with ctx.store.read() as tx:
        last = tx.latest_checkpoint(tenant)
    # No checkpoint yet: count from zero, and treat the log as due by age.
    found = (0, 0) if last is None else (last.size, last.created_at)
    with proof.state.lock:
        proof.state.last.setdefault(tenant, found)
    return found
