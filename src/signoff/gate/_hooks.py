"""Named points inside an execution where a test harness may pause, mutate or crash."""

from __future__ import annotations

import enum
from typing import Protocol

from signoff._model import Execution


class HookPoint(enum.StrEnum):
    AFTER_CONSUME = "after_consume"
    """The token is consumed and the first attempt started in the same write (``running``,
    lease taken); the provider was not called."""
    BEFORE_PROVIDER_CALL = "before_provider_call"
    """The execution is ``running`` (lease taken); the provider is about to be called."""
    AFTER_PROVIDER_SUCCESS = "after_provider_success"
    """The provider answered; its answer is not yet recorded."""
    AFTER_RECORD = "after_record"
    """The outcome is recorded; the caller has not been answered yet."""


class ExecutionHooks(Protocol):
    def __call__(self, point: HookPoint, execution: Execution) -> None: ...


def no_hooks(point: HookPoint, execution: Execution) -> None:
    """The production default: no pauses."""
