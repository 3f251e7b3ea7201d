"""FaultHarness: pause, mutate or crash an execution at a named point, from a test."""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from signoff._model import Execution
from signoff.gate._hooks import HookPoint
from signoff.testing._crash import SimulatedCrash
from signoff.testing._effects import Effect, EffectReport, effects_added

T = TypeVar("T")
WAIT_S = 10.0
# A paused worker gives up after this long, so a failing test never hangs forever.
PAUSE_LIMIT_S = 120.0


class Then(enum.StrEnum):
    """What the worker does after an action at a hook point."""

    RESUME = "resume"
    CRASH = "crash"


@dataclass(frozen=True, slots=True)
class Reached:
    point: HookPoint
    execution: Execution


@dataclass(frozen=True, slots=True)
class Returned(Generic[T]):
    """The call returned normally."""

    value: T


@dataclass(frozen=True, slots=True)
class Raised:
    """The call raised (a refusal such as ``StateChanged``, or a bug)."""

    error: Exception


@dataclass(frozen=True, slots=True)
class Crashed:
    """The worker died at ``point``; nothing after it ran."""

    point: HookPoint
    execution: Execution


Outcome = Returned[T] | Raised | Crashed


class HarnessTimeout(AssertionError):
    """A worker did not reach a point, or a call did not finish, in time."""


class Pause:
    """A worker stopped at a point, waiting for the test to ``resume()`` or ``crash()`` it."""

    def __init__(self, point: HookPoint) -> None:
        self.point = point
        self._reached = threading.Event()
        self._released = threading.Event()
        self._crash = False
        self._execution: Execution | None = None

    def wait(self, timeout: float = WAIT_S) -> Execution:
        """Block until a worker reaches the point; return its execution as stored there."""
        if not self._reached.wait(timeout):
            raise HarnessTimeout(f"no worker reached {self.point.value} within {timeout}s")
        assert self._execution is not None
        return self._execution

    def resume(self) -> None:
        self._released.set()

    def crash(self) -> None:
        self._crash = True
        self._released.set()

    def _arrive(self, execution: Execution) -> None:
        self._execution = execution
        self._reached.set()
        if not self._released.wait(PAUSE_LIMIT_S):
            raise SimulatedCrash(self.point, execution)
        if self._crash:
            raise SimulatedCrash(self.point, execution)


@dataclass
class _Rule:
    point: HookPoint
    action: Callable[[Execution], object] | None
    then: Then
    remaining: int


class Run(Generic[T]):
    """A call running in its own thread, so the test can act while it is paused."""

    def __init__(self, call: Callable[[], T]) -> None:
        self._outcome: Outcome[T] | None = None
        self._thread = threading.Thread(target=self._main, args=(call,), daemon=True)
        self._thread.start()

    def _main(self, call: Callable[[], T]) -> None:
        self._outcome = capture(call)

    def outcome(self, timeout: float = WAIT_S) -> Outcome[T]:
        self._thread.join(timeout)
        if self._thread.is_alive() or self._outcome is None:
            raise HarnessTimeout(f"the call did not finish within {timeout}s")
        return self._outcome


def capture(call: Callable[[], T]) -> Outcome[T]:
    """Run ``call``; a simulated crash or an exception becomes an outcome, not a raise."""
    try:
        return Returned(call())
    except SimulatedCrash as crash:
        return Crashed(crash.point, crash.execution)
    except Exception as exc:  # the outcome under test, reported to the caller
        return Raised(exc)


class FaultHarness:
    """Hooks for ``Gate(..., hooks=harness)`` that pause, mutate or crash at named points.

    Rules fire in the order they were armed, each for ``times`` arrivals. The
    harness also remembers every point reached and, given ``effects`` (what
    the provider has done, e.g. its ledger), reports the effects added since
    it was created.
    """

    def __init__(self, *, effects: Callable[[], Iterable[Effect]] | None = None) -> None:
        self._effects = effects
        self._baseline: list[Effect] = list(effects()) if effects is not None else []
        self._rules: list[_Rule | Pause] = []
        self._lock = threading.Lock()
        self.reached: list[Reached] = []

    def __call__(self, point: HookPoint, execution: Execution) -> None:
        with self._lock:
            self.reached.append(Reached(point, execution))
            rule = next((r for r in self._rules if r.point is point), None)
            if rule is not None and (isinstance(rule, Pause) or rule.remaining <= 1):
                self._rules.remove(rule)
            elif isinstance(rule, _Rule):
                rule.remaining -= 1
        if isinstance(rule, Pause):
            rule._arrive(execution)
        elif rule is not None:
            if rule.action is not None:
                rule.action(execution)
            if rule.then is Then.CRASH:
                raise SimulatedCrash(point, execution)

    def on(
        self,
        point: HookPoint,
        action: Callable[[Execution], object] | None = None,
        *,
        then: Then = Then.RESUME,
        times: int = 1,
    ) -> None:
        """At ``point``, run ``action`` in the worker (e.g. change the order), then go on or die."""
        if times < 1:
            raise ValueError("times must be at least 1")
        with self._lock:
            self._rules.append(_Rule(point, action, then, times))

    def crash_at(self, point: HookPoint, *, times: int = 1) -> None:
        """The next worker reaching ``point`` dies there."""
        self.on(point, then=Then.CRASH, times=times)

    def pause_at(self, point: HookPoint) -> Pause:
        """The next worker reaching ``point`` waits there until the test releases it."""
        pause = Pause(point)
        with self._lock:
            self._rules.append(pause)
        return pause

    def start(self, call: Callable[[], T]) -> Run[T]:
        """Run ``call`` (e.g. ``lambda: gate.execute(...)``) in a thread of its own."""
        return Run(call)

    def run(self, call: Callable[[], T]) -> Outcome[T]:
        """Run ``call`` here; a simulated crash is returned as :class:`Crashed`."""
        return capture(call)

    def points(self) -> list[HookPoint]:
        with self._lock:
            return [r.point for r in self.reached]

    def effects(self) -> EffectReport:
        """The provider's effects added since this harness was created."""
        if self._effects is None:
            raise ValueError("this harness was created without an effects source")
        return effects_added(self._baseline, list(self._effects()))
