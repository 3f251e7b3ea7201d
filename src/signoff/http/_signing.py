"""The gate's signing setup from the settings: keys, token forms, checkpoint cadence."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from signoff.gate._gate import Gate
from signoff.gate._proof import GateProof
from signoff.http._settings import Settings
from signoff.proof import KeySet

log = logging.getLogger("signoff.proof")


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


@asynccontextmanager
async def checkpointing(gate: Gate) -> AsyncIterator[None]:
    """Every ``checkpoint_seconds``, checkpoint the logs that went quiet with events uncovered.

    Writes check the count and age limits themselves; this pass makes the age
    limit hold when no further write comes. Each worker runs one: two workers
    signing the same size store one checkpoint.
    """
    proof = gate.proof
    if proof is None:
        yield
        return
    interval = max(1, proof.checkpoint_seconds)

    async def every_interval() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(gate.checkpoint_due)
            except Exception:
                # One bad pass (the store briefly away) must not end the loop.
                log.exception("checkpoint pass failed; trying again after the interval")

    task = asyncio.create_task(every_interval(), name="signoff-checkpoints")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
