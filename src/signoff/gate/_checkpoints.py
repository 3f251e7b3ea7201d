"""Checkpointing each tenant's audit tree: every N events, every T seconds, after executions.

A checkpoint folds the events since the previous one into the stored
frontier, signs the new root as a C2SP note and stores it (its own small
write transaction, after the write that appended the events committed).
Two workers checkpointing the same size sign the same root; the first row
stands. Checkpointing never turns a committed write into an error: a failure
is logged and the next write tries again. ``signoff.proof`` (PyJWT,
``cryptography``) is imported on first use, so ``import signoff`` stays light
for processes that sign nothing.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from signoff.exceptions import StoreError
from signoff.store._sql import CheckpointRecord, SqlTransaction

if TYPE_CHECKING:
    from signoff.gate._context import GateContext

log = logging.getLogger("signoff.proof")
MICROS = 1_000_000


def checkpoint(ctx: GateContext, tenant: str) -> CheckpointRecord | None:
    """Sign the tenant's tree at its current head (or return the checkpoint already there)."""
    from signoff.proof import Checkpoint, CompactTree, leaf_hash, sign_checkpoint

    proof = ctx.proof
    assert proof is not None

    def step(tx: SqlTransaction) -> CheckpointRecord | None:
        last = tx.latest_checkpoint(tenant)
        size, head = (0 if last is None else last.size), tx.audit_head_seq(tenant)
        if head <= size:
            return last
        frontier = () if last is None else tuple(base64.b64decode(h) for h in last.frontier)
        tree = CompactTree(frontier, size)
        for digest in tx.audit_hashes(tenant, size, head):
            tree.append(leaf_hash(bytes.fromhex(digest)))
        root = tree.root()
        note = sign_checkpoint(proof.keys.note_key(), Checkpoint(proof.origin(tenant), head, root))
        record = CheckpointRecord(
            tenant=tenant,
            size=head,
            root=base64.b64encode(root).decode(),
            frontier=tuple(base64.b64encode(h).decode() for h in tree.frontier()),
            note=note,
            created_at=ctx.now_micros(),
        )
        tx.insert_checkpoint(record)
        return record

    made = ctx.write(step)
    if made is not None:
        with proof.state.lock:
            proof.state.last[tenant] = (made.size, made.created_at)
    return made


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
    try:
        action()
    except retryable:
        log.warning("checkpoint of tenant %s failed; the next write tries again", tenant)


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
