"""How a harness stops a worker at a named point: in-process, or by killing the process."""

from __future__ import annotations

import os
import signal

from signoff._model import Execution
from signoff.gate._hooks import ExecutionHooks, HookPoint


class SimulatedCrash(BaseException):
    """Raised at a hook point to stop the worker dead: nothing after the point runs.

    A ``BaseException``, so no ``except Exception`` in an adapter or in signoff
    can swallow it. Hook points sit outside every store transaction, so what
    the store holds afterwards is exactly what a killed process leaves behind.
    """

    def __init__(self, point: HookPoint, execution: Execution) -> None:
        super().__init__(f"simulated crash at {point.value} in {execution.execution_id}")
        self.point = point
        self.execution = execution


def kill_at(target: HookPoint, *, signum: int = signal.SIGKILL) -> ExecutionHooks:
    """Hooks that kill the current process (``kill -9`` by default) when ``target`` is reached.

    Use it in a worker *subprocess* of your test: ``Gate(..., hooks=kill_at(point))``.
    """

    def hooks(point: HookPoint, execution: Execution) -> None:
        if point is target:
            os.kill(os.getpid(), signum)

    return hooks
