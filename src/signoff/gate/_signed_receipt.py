"""The signed receipt of a terminal execution, with inclusion proofs to a checkpoint.

The evidence is the proposal's events (and the passkey enrolments its device
signatures rely on) up to the first checkpoint that holds the outcome. The
proofs need only the events since the checkpoint made before the proposal:
``PartialTree`` completes the tree from that checkpoint's stored frontier.
"""

from __future__ import annotations

import base64
import dataclasses
from typing import TYPE_CHECKING

from signoff._model import ExecutionResult
from signoff.audit._chain import AuditEvent
from signoff.gate._checkpoints import checkpoint_quietly
from signoff.store._sql import CheckpointRecord, SqlTransaction

if TYPE_CHECKING:
    from signoff.gate._context import GateContext
    from signoff.proof import PartialTree

MICROS = 1_000_000


def with_signed_receipt(ctx: GateContext, result: ExecutionResult) -> ExecutionResult:
    """Checkpoint after a new outcome, then add the signed receipt beside the plain one."""
    if ctx.proof is None or result.receipt is None:
        return result
    execution = result.execution
    if not result.duplicate:
        checkpoint_quietly(ctx, execution.tenant)  # at the end of each execution
    signed = signed_receipt(ctx, execution.tenant, execution.proposal_id, execution.execution_id)
    return dataclasses.replace(result, signed_receipt=signed)


def signed_receipt(
    ctx: GateContext, tenant: str, proposal_id: str, execution_id: str
) -> str | None:
    """The JWS receipt, or None while no checkpoint holds the outcome yet."""
    proof = ctx.proof
    if proof is None:
        return None
    from signoff.proof import evidence_for, sign_receipt
    from signoff.proof._receipt import TERMINAL

    with ctx.store.read() as tx:
        events = tx.audit_events(tenant=tenant, proposal_id=proposal_id)
        outcome = [e for e in events if e.kind in TERMINAL and e.execution_id == execution_id]
        covering = outcome and tx.checkpoint_covering(tenant, outcome[-1].seq)
        if not covering:
            return None
        evidence = [e for e in events if e.seq <= covering.size]
        evidence += _enrolments(tx, tenant, evidence, covering.size)
        evidence.sort(key=lambda e: e.seq)
        tree = _tree(tx, tenant, evidence[0].seq, covering)
    return sign_receipt(
        proof.keys.signing_key("receipt"),
        issuer=proof.issuer,
        issued_at=outcome[-1].at // MICROS,
        events=evidence,
        evidence=evidence_for(evidence, tree.inclusion_proof, covering.cosigned_note),
    )


def _tree(tx: SqlTransaction, tenant: str, first: int, covering: CheckpointRecord) -> PartialTree:
    from signoff.proof import PartialTree, leaf_hash

    base = tx.checkpoint_before(tenant, first)
    size = 0 if base is None else base.size
    frontier = [] if base is None else [base64.b64decode(h) for h in base.frontier]
    leaves = [leaf_hash(bytes.fromhex(h)) for h in tx.audit_hashes(tenant, size, covering.size)]
    return PartialTree(frontier, size, leaves)


def _enrolments(
    tx: SqlTransaction, tenant: str, events: list[AuditEvent], upto: int
) -> list[AuditEvent]:
    """``passkey.registered`` events of the approvers whose decisions carry a device assertion."""
    people = {e.actor for e in events if e.kind == "decision.approved" and '"device":{' in e.data}
    if not people:
        return []
    # Looked up by the partial index of enrolments (migration 14), not by reading the whole
    # log: a receipt costs the same whatever the log's length.
    return tx.enrolments(tenant, (p for p in people if p is not None), upto)
