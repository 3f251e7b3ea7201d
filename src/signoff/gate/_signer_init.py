"""Re-initialising the signer's view of a log: the explicit, audited operator step.

Used after an upgrade from a version without signer state, after the state
was lost, or to resume a log the signer refused. The whole chain is checked
and the tree recomputed; the view becomes the newest stored checkpoint that
this deployment's keys signed for the log's origin and whose root the
recomputed tree reproduces (or the empty log). With ``adopt_head`` the
operator also vouches for everything up to the head — events without an
authenticator included — and a checkpoint is signed there. Either way a
``signer.initialised`` event records who did what.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from signoff.audit._chain import verify_chain
from signoff.exceptions import CheckpointInconsistent
from signoff.gate._checkpoints import MICROS, checkpoint
from signoff.store._sql import CheckpointRecord

if TYPE_CHECKING:
    from signoff.gate._context import GateContext
    from signoff.proof._signer_state import SignedView

INITIALISED_KIND = "signer.initialised"


def init_signer(ctx: GateContext, tenant: str, *, adopt_head: bool) -> CheckpointRecord | None:
    proof = ctx.proof
    assert proof is not None
    origin = proof.origin(tenant)
    view = _recomputed_view(ctx, tenant, origin)
    with proof.signer.hold(origin) as slot:
        previous = slot.view
        slot.save(view)
    with proof.state.lock:
        proof.state.refused.pop(tenant, None)
        proof.state.last.pop(tenant, None)
    data = {
        "origin": origin,
        "size": view.size,
        "root": base64.b64encode(view.root).decode(),
        "previous_size": None if previous is None else previous.size,
        "adopt_head": adopt_head,
    }

    with ctx.store.transaction() as tx:  # not ctx.write: the checkpoint below is explicit
        tx.append_audit(tenant=tenant, at=ctx.now_micros(), kind=INITIALISED_KIND, data=data)
    return checkpoint(ctx, tenant, adopt=adopt_head)


def _recomputed_view(ctx: GateContext, tenant: str, origin: str) -> SignedView:
    from signoff.proof import CompactTree, leaf_hash, open_checkpoint
    from signoff.proof._note import NoteRejected
    from signoff.proof._signer_state import SignedView

    proof = ctx.proof
    assert proof is not None
    with ctx.store.read() as tx:
        events = tx.audit_events(tenant=tenant)
        stored = {c.size: c for c in tx.checkpoints(tenant)}
    heads = {tenant: (events[-1].seq, events[-1].hash)} if events else {}
    report = verify_chain(events, heads)
    if not report.ok:
        raise CheckpointInconsistent(
            f"{origin}: the chain is broken at {report.first_bad} — nothing can be vouched for",
            tenant=tenant,
        )
    view = SignedView.empty(origin)
    tree = CompactTree()
    for event in events:
        tree.append(leaf_hash(bytes.fromhex(event.hash)))
        record = stored.get(tree.size)
        if record is None:
            continue
        try:
            signed = open_checkpoint(record.note, proof.public_keys, origin=origin)
        except NoteRejected:
            continue
        if signed.root == tree.root():
            frontier, at = tuple(tree.frontier()), record.created_at // MICROS
            view = SignedView(origin, tree.size, tree.root(), event.hash, frontier, at)
    return view
