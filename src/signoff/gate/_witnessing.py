"""Submitting each new checkpoint to the deployment's witnesses (c2sp.org/tlog-witness).

For each witness: send the checkpoint with a consistency proof from the size
the witness was last seen at (remembered per process, at first the previous
checkpoint's size); on ``409`` take the size the witness answered and try
again. The proof comes from the stored frontier at that size plus the events
since (``PartialTree``), or from the whole log when no checkpoint of that
size is stored. Cosignature lines returned are kept with the checkpoint; a
witness that refuses or cannot be reached is logged, and the checkpoint
stands without its cosignature (a verifier that requires it will say so).
"""

from __future__ import annotations

import base64
import dataclasses
import logging
from typing import TYPE_CHECKING

from signoff.store._sql import CheckpointRecord

if TYPE_CHECKING:
    from signoff.gate._context import GateContext
    from signoff.proof._witness import Witness

log = logging.getLogger("signoff.proof")
ATTEMPTS = 3


def cosign(ctx: GateContext, record: CheckpointRecord, previous: int) -> CheckpointRecord:
    proof = ctx.proof
    assert proof is not None
    lines: list[str] = list(record.cosignatures)
    origin = proof.origin(record.tenant)
    for witness in proof.witnesses:
        got = _submit(ctx, witness, record, origin, previous)
        lines.extend(line for line in got if line not in lines)
    if tuple(lines) == record.cosignatures:
        return record
    with ctx.store.transaction() as tx:
        tx.add_cosignatures(record.tenant, record.size, tuple(lines))
    return dataclasses.replace(record, cosignatures=tuple(lines))


def _submit(
    ctx: GateContext, witness: Witness, record: CheckpointRecord, origin: str, previous: int
) -> list[str]:
    from signoff.proof._witness import WitnessConflict, WitnessRefused, submit

    proof = ctx.proof
    assert proof is not None
    with proof.state.lock:
        old = proof.state.witnessed.get((witness.name, origin), previous)
    for _ in range(ATTEMPTS):
        if old > record.size:
            log.error("witness %s is ahead of %s (%d > %d)", witness.name, origin, old, record.size)
            return []
        try:
            lines = submit(witness, record.note, old, consistency(ctx, record, old))
        except WitnessConflict as conflict:
            old = conflict.size
            continue
        except WitnessRefused as exc:
            log.warning("witness did not cosign %s at %d: %s", origin, record.size, exc)
            return []
        with proof.state.lock:
            proof.state.witnessed[(witness.name, origin)] = record.size
        return lines
    log.warning("witness %s kept answering 409 for %s", witness.name, origin)
    return []


def consistency(ctx: GateContext, record: CheckpointRecord, old: int) -> list[bytes]:
    """The RFC 9162 consistency proof from size ``old`` to ``record.size``."""
    from signoff.proof import PartialTree, leaf_hash
    from signoff.proof._merkle import consistency_proof

    if old == 0 or old == record.size:
        return []
    with ctx.store.read() as tx:
        base = tx.checkpoint_at(record.tenant, old)
        start = 0 if base is None else old
        hashes = tx.audit_hashes(record.tenant, start, record.size)
    leaves = [leaf_hash(bytes.fromhex(h)) for h in hashes]
    if base is None:
        return consistency_proof(old, leaves)
    frontier = [base64.b64decode(h) for h in base.frontier]
    return PartialTree(frontier, old, leaves).consistency_proof()
