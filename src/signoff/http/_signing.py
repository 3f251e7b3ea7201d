"""The gate's signing setup from the settings: keys, token forms, checkpoint cadence."""

from __future__ import annotations

from signoff.gate._proof import GateProof
from signoff.http._settings import Settings
from signoff.proof import KeySet


def gate_proof(settings: Settings) -> GateProof | None:
    """None without signing keys; demo mode makes a key when none is configured.

    ``signoff serve --demo`` makes that key before its workers start and hands
    it to them in ``SIGNOFF_SIGNING_KEYS``, so every worker signs with one key.
    """
    keys = settings.signing_keyset()
    if keys is None and settings.demo:
        keys = KeySet.generate()
    if keys is None:
        return None
    return GateProof(
        keys,
        issuer=settings.public_url or settings.log_name,
        log_name=settings.log_name,
        token_form=settings.token_form,
        tool_forms=dict(settings.token_form_tools),
        checkpoint_events=settings.checkpoint_events,
        checkpoint_seconds=settings.checkpoint_seconds,
    )
