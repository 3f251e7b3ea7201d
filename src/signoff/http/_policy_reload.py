"""``signoff serve --policy FILE``: the policy in force, put on record, reloaded on SIGHUP.

At start and on each SIGHUP the file is read and checked against the catalog;
a file with problems is refused (at start the server does not start; on a
reload the previous policy stays in force and the problem is logged). A new
version is recorded and announced in every tenant's audit chain
(``gate/_policy_apply.py``) before a proposal is made under it.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from signoff._clock import to_micros
from signoff.exceptions import SignoffError
from signoff.gate._gate import Gate
from signoff.gate._policy_apply import apply_policy
from signoff.policy import PolicySource

log = logging.getLogger("signoff.policy")


def record_in_force(gate: Gate, source: PolicySource, *, by: str) -> None:
    policy = source.current
    if policy is None:
        return
    now = to_micros(gate.clock.now())
    if apply_policy(gate.store, policy, applied_by=by, now=now) is not None:
        log.info("policy version %s from %s is in force", policy.digest, policy.source)


def reload_policy(gate: Gate, source: PolicySource) -> bool:
    """Read the file again; True when the new one is in force (and on record)."""
    try:
        source.reload()
        record_in_force(gate, source, by="signoff serve (SIGHUP)")
    except SignoffError as exc:
        log.error("policy reload refused; the previous policy stays in force: %s", exc.message)
        return False
    return True


@asynccontextmanager
async def reloading_on_sighup(gate: Gate, source: PolicySource) -> AsyncIterator[None]:
    """While the server runs, SIGHUP reloads the policy file (off the event loop)."""
    loop = asyncio.get_running_loop()

    def on_hup() -> None:
        loop.run_in_executor(None, reload_policy, gate, source)

    try:
        loop.add_signal_handler(signal.SIGHUP, on_hup)
        installed = True
    except (NotImplementedError, RuntimeError, ValueError):
        installed = False  # not the main thread (an in-process test client): no signals
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGHUP)
