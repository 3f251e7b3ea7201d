"""Fault harness for signoff and for your own provider adapters.

Pass a :class:`FaultHarness` as ``Gate(..., hooks=harness)`` and, at a named
:class:`~signoff.HookPoint`, pause the worker (:meth:`FaultHarness.pause_at`),
run a mutation in it (:meth:`FaultHarness.on`), or crash it
(:meth:`FaultHarness.crash_at`; :func:`kill_at` for a real ``kill -9`` in a
subprocess). Then compare the execution records with what the provider did:
:func:`check_exactly_once`. docs/ADAPTERS.md walks through it.

:class:`FakeProvider` stands for a downstream service while you try or test a
tool (docs/TOOLS.md): one effect per idempotency key, in a SQLite file.
"""

from signoff.gate._hooks import HookPoint
from signoff.testing._crash import SimulatedCrash, kill_at
from signoff.testing._effects import (
    Effect,
    EffectReport,
    Verdict,
    check_exactly_once,
    effects_added,
)
from signoff.testing._harness import (
    Crashed,
    FaultHarness,
    HarnessTimeout,
    Outcome,
    Pause,
    Raised,
    Reached,
    Returned,
    Run,
    Then,
    capture,
)
from signoff.testing._provider import FakeProvider, ProviderRecord

__all__ = [
    "Crashed",
    "Effect",
    "EffectReport",
    "FakeProvider",
    "FaultHarness",
    "HarnessTimeout",
    "HookPoint",
    "Outcome",
    "Pause",
    "ProviderRecord",
    "Raised",
    "Reached",
    "Returned",
    "Run",
    "SimulatedCrash",
    "Then",
    "Verdict",
    "capture",
    "check_exactly_once",
    "effects_added",
    "kill_at",
]
