"""Exporting one tenant's audit log as a self-contained, offline-verifiable bundle."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from signoff.exceptions import InvalidRequest
from signoff.gate._checkpoints import checkpoint

if TYPE_CHECKING:
    from signoff.gate._context import GateContext


def export_bundle(ctx: GateContext, tenant: str, *, since: int = 0) -> dict[str, Any]:
    """Checkpoint the tenant's log now, then bundle its events, checkpoints, proofs and keys.

    ``since`` is the size of a stored checkpoint: the bundle then holds only
    the later events and proves they continue that checkpoint.
    """
    proof = ctx.proof
    if proof is None:
        raise InvalidRequest("exporting needs the signing keys — set SIGNOFF_SIGNING_KEYS_FILE")
    from signoff.proof import build_bundle

    checkpoint(ctx, tenant)
    with ctx.store.read() as tx:
        events = tx.audit_events(tenant=tenant)
        checkpoints = tx.checkpoints(tenant)
    sizes = [c.size for c in checkpoints]
    if since and since not in sizes:
        known = ", ".join(map(str, sizes[-5:])) or "none yet"
        raise InvalidRequest(f"no checkpoint of size {since} — use one of: {known}")
    return build_bundle(
        tenant=tenant,
        origin=proof.origin(tenant),
        events=events,
        checkpoints=[(c.size, c.note) for c in checkpoints],
        jwks=proof.keys.public_jwks(),
        since=since,
    )
