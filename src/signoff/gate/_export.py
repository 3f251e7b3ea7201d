"""Exporting one tenant's audit log as a self-contained, offline-verifiable bundle.

The exporter never leaves out a signed checkpoint because the log is shorter
than it: every stored checkpoint is shipped, and when the signer's own view
(kept outside the store) is larger than what the store still holds, that
checkpoint is signed again from the view (same body, signed now), so the
verifier reports the truncation (``events_missing``) instead of a clean,
shorter log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from signoff.exceptions import InvalidRequest, SignerRefused
from signoff.gate._checkpoints import MICROS, checkpoint, report_refusal

if TYPE_CHECKING:
    from signoff.gate._context import GateContext


def export_bundle(
    ctx: GateContext, tenant: str, *, since: int = 0, problems: list[str] | None = None
) -> dict[str, Any]:
    """Checkpoint the tenant's log now, then bundle its events, checkpoints and proofs.

    ``since`` is the size of a stored checkpoint: the bundle then holds only
    the later events and proves they continue that checkpoint. What the
    exporter found wrong (a refused checkpoint, a truncated log) is appended
    to ``problems``.
    """
    proof = ctx.proof
    if proof is None:
        raise InvalidRequest("exporting needs the signing keys — set SIGNOFF_SIGNING_KEYS_FILE")
    from signoff.proof import build_bundle

    found: list[str] = [] if problems is None else problems
    try:
        checkpoint(ctx, tenant)
    except SignerRefused as refusal:
        report_refusal(ctx, tenant, refusal)
        found.append(f"[{refusal.code}] {refusal.message}")
    with ctx.store.read() as tx:
        events = tx.audit_events(tenant=tenant)
        checkpoints = tx.checkpoints(tenant)
    notes = [(c.size, c.cosigned_note) for c in checkpoints]
    restored = _signers_view(ctx, tenant, {size for size, _ in notes})
    if restored is not None:
        notes = sorted([*notes, restored])
    if notes and notes[-1][0] > len(events):
        found.append(
            f"[events_missing] the log holds {len(events)} events but a checkpoint of"
            f" {notes[-1][0]} was signed: events were deleted from the store"
        )
    sizes = [size for size, _ in notes]
    if since and since not in sizes:
        known = ", ".join(map(str, sizes[-5:])) or "none yet"
        raise InvalidRequest(f"no checkpoint of size {since} — use one of: {known}")
    return build_bundle(
        tenant=tenant,
        origin=proof.origin(tenant),
        events=events,
        checkpoints=notes,
        jwks=proof.keys.public_jwks(),
        since=since,
    )


def _signers_view(ctx: GateContext, tenant: str, stored: set[int]) -> tuple[int, str] | None:
    """The signer's last checkpoint again, when the store no longer holds it."""
    from signoff.proof import Checkpoint, sign_checkpoint

    proof = ctx.proof
    assert proof is not None
    with proof.signer.hold(proof.origin(tenant)) as slot:
        view = slot.view
    if view is None or view.size == 0 or view.size in stored:
        return None
    key = proof.keys.note_key()
    body = Checkpoint(view.origin, view.size, view.root)
    return view.size, sign_checkpoint(key, body, timestamp=ctx.now_micros() // MICROS)
