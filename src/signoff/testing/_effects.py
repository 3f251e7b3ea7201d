"""External side effects, and the exactly-once check of execution records against them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from signoff._model import Execution, ExecutionStatus


@dataclass(frozen=True, slots=True)
class Effect:
    """One thing the provider did, as the provider records it."""

    request_key: str
    reference: str


@dataclass(frozen=True, slots=True)
class EffectReport:
    """Effects that appeared during a test."""

    added: tuple[Effect, ...]

    def for_key(self, request_key: str) -> tuple[Effect, ...]:
        return tuple(e for e in self.added if e.request_key == request_key)

    @property
    def duplicates(self) -> dict[str, int]:
        """Request keys with more than one effect."""
        counts = Counter(e.request_key for e in self.added)
        return {key: n for key, n in counts.items() if n > 1}


def effects_added(before: Iterable[Effect], after: Iterable[Effect]) -> EffectReport:
    remaining = Counter(before)
    added = []
    for effect in after:
        if remaining[effect] > 0:
            remaining[effect] -= 1
        else:
            added.append(effect)
    return EffectReport(tuple(added))


@dataclass(frozen=True, slots=True)
class Verdict:
    """Execution records compared with the provider's effects.

    ``duplicates``: executions with more than one effect. ``lost``: recorded
    ``succeeded`` but no effect carries the recorded reference. ``unrecorded``:
    the provider acted, but the record says ``failed_terminal``. ``open``: not
    terminal (``prepared``, ``running``, ``unknown``, ``failed_retryable``,
    ``needs_attention``). ``orphans``: effects under a request key no given
    execution owns. ``failed``: correct terminal failures (no effect).
    """

    executions: int
    effects: int
    duplicates: tuple[str, ...]
    lost: tuple[str, ...]
    unrecorded: tuple[str, ...]
    open: tuple[str, ...]
    orphans: tuple[Effect, ...]
    failed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not (self.duplicates or self.lost or self.unrecorded or self.open or self.orphans)

    def summary(self) -> str:
        return (
            f"{self.executions} executions, {self.effects} effects: "
            f"{len(self.duplicates)} duplicate, {len(self.lost)} lost, "
            f"{len(self.unrecorded)} unrecorded, {len(self.open)} open, "
            f"{len(self.orphans)} orphan, {len(self.failed)} failed terminally"
        )


def check_exactly_once(executions: Iterable[Execution], effects: Iterable[Effect]) -> Verdict:
    """Each execution: ``succeeded`` with exactly one effect bearing its reference, or
    ``failed_terminal`` with none; never two effects, never an effect nobody recorded."""
    by_key: dict[str, list[Effect]] = {}
    all_effects = list(effects)
    for effect in all_effects:
        by_key.setdefault(effect.request_key, []).append(effect)
    records = list(executions)
    duplicates: list[str] = []
    lost: list[str] = []
    unrecorded: list[str] = []
    still_open: list[str] = []
    failed: list[str] = []
    for e in records:
        mine = by_key.pop(e.request_key, [])
        if len(mine) > 1:
            duplicates.append(e.execution_id)
        if e.status is ExecutionStatus.SUCCEEDED:
            if not any(effect.reference == e.provider_reference for effect in mine):
                lost.append(e.execution_id)
        elif e.status is ExecutionStatus.FAILED_TERMINAL:
            (unrecorded if mine else failed).append(e.execution_id)
        else:
            still_open.append(e.execution_id)
    orphans = tuple(effect for rest in by_key.values() for effect in rest)
    return Verdict(
        executions=len(records),
        effects=len(all_effects),
        duplicates=tuple(duplicates),
        lost=tuple(lost),
        unrecorded=tuple(unrecorded),
        open=tuple(still_open),
        orphans=orphans,
        failed=tuple(failed),
    )
