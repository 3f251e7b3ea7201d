"""The gate's signing setup from the settings: keys, token forms, cadence, signer, witnesses."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from signoff._paths import data_dir, is_postgres
from signoff.exceptions import ProofFormatError, SignerRefused
from signoff.gate._gate import Gate
from signoff.gate._proof import GateProof, log_name_for
from signoff.http._settings import Settings, SettingsError
from signoff.proof import FileSignerState, KeySet, load_keyset, state_directory_for
from signoff.proof._witness import parse_witnesses

log = logging.getLogger("signoff.proof")


def demo_keys_file(database_url: str) -> Path:
    """The demo's development key file, made on first use: beside a SQLite database (its
    signer state beside it), or in the data directory for PostgreSQL — one per database, so
    a demo database and what signed it stay together (delete them together)."""
    if is_postgres(database_url):
        name = hashlib.sha256(database_url.encode()).hexdigest()[:16]
        path = data_dir() / f"demo-signing-keys-{name}.json"
    else:
        db = database_url.removeprefix("sqlite:///").removeprefix("sqlite://")
        path = Path(f"{db}.demo-signing-keys.json")
    if not path.exists():
        KeySet.generate().save(path)
    return path


def gate_proof(
    settings: Settings, *, on_refusal: Callable[[SignerRefused], None] | None = None
) -> GateProof | None:
    """None without signing keys; demo mode keeps a development key file in the data directory.

    ``signoff serve --demo`` makes that file before its workers start, so every
    worker signs with one key and one signer state, across restarts.
    """
    keys = settings.signing_keyset()
    keys_file = settings.signing_keys_file
    if keys is None and settings.demo:
        keys_file = demo_keys_file(settings.database_url)
        keys = load_keyset(keys_file)
    if keys is None:
        return None
    state = settings.signer_state
    if state is None and keys_file is None:
        raise SettingsError(
            "SIGNOFF_SIGNING_KEYS holds the keys, so the signer's state has no file to live"
            " beside — set SIGNOFF_SIGNER_STATE to a directory only the signer can write"
        )
    try:
        witnesses = parse_witnesses(settings.witnesses or "")
    except ProofFormatError as exc:
        raise SettingsError(f"SIGNOFF_WITNESSES: {exc.message}") from None
    log_name = settings.log_name or log_name_for(settings.public_url, keys)
    return GateProof(
        keys,
        issuer=settings.public_url or log_name,
        log_name=log_name,
        token_form=settings.token_form,
        tool_forms=dict(settings.token_form_tools),
        checkpoint_events=settings.checkpoint_events,
        checkpoint_seconds=settings.checkpoint_seconds,
        signer=FileSignerState(state or state_directory_for(str(keys_file))),
        witnesses=witnesses,
        on_refusal=on_refusal,
    )


@asynccontextmanager
async def checkpointing(gate: Gate) -> AsyncIterator[None]:
    """Every ``checkpoint_seconds``, checkpoint the logs that went quiet with events uncovered.

    Writes check the count and age limits themselves; this pass makes the age
    limit hold when no further write comes. Each worker runs one: the signer's
    lock makes them take turns, and they sign one checkpoint per size.
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
