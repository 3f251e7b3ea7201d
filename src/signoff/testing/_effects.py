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

    ``duplicates``: executions with more than one effect (under their request key, or
    carrying their recorded reference). ``lost``: recorded ``succeeded`` but no effect
    carries the recorded reference. ``unrecorded``: the provider acted, but the record
    says ``failed_terminal``. ``open``: not terminal (``prepared``, ``running``,
    ``unknown``, ``failed_retryable``, ``needs_attention``). ``orphans``: effects that no
    given execution accounts for — under a request key none of them has, with a reference
    none recorded (a tool that sent a second e-mail under a key of its own). ``foreign_key``:
    effects that carry an execution's reference under another request key (the tool did not
    pass ``request_key`` to the provider). ``failed``: correct terminal failures (no effect).
    """

    executions: int
    effects: int
    duplicates: tuple[str, ...]
    lost: tuple[str, ...]
    unrecorded: tuple[str, ...]
    open: tuple[str, ...]
    orphans: tuple[Effect, ...]
    failed: tuple[str, ...]
    foreign_key: tuple[Effect, ...] = ()
    extra_effects: int = 0
    """Effects beyond one per execution that has any: what a person calls duplicates."""

    @property
    def ok(self) -> bool:
        return not (
            self.duplicates
            or self.lost
            or self.unrecorded
            or self.open
            or self.orphans
            or self.foreign_key
        )

    def summary(self) -> str:
        verdict = "exactly once" if self.ok else "NOT exactly once"
        return (
            f"{verdict}: {self.executions} executions, {self.effects} effects "
            f"({self.extra_effects} beyond one per execution); "
            f"{len(self.duplicates)} executions with several effects, {len(self.lost)} lost, "
            f"{len(self.unrecorded)} unrecorded, {len(self.open)} open, "
            f"{len(self.orphans)} effects no execution accounts for, "
            f"{len(self.foreign_key)} under another request key, "
            f"{len(self.failed)} failed terminally"
        )


def check_exactly_once(executions: Iterable[Execution], effects: Iterable[Effect]) -> Verdict:
    """Each execution: ``succeeded`` with exactly one effect bearing its reference, or
    ``failed_terminal`` with none; never two effects, never an effect nobody recorded.

    Effects are matched to executions by request key first, then by the reference an
    execution recorded, so a tool that ignores the request key is still counted.
    """
    all_effects = list(effects)
    records = list(executions)
    by_key: dict[str, list[Effect]] = {}
    for effect in all_effects:
        by_key.setdefault(effect.request_key, []).append(effect)
    keys = {e.request_key for e in records}
    by_reference = {e.provider_reference: e for e in records if e.provider_reference}
    foreign: dict[str, list[Effect]] = {}
    orphans: list[Effect] = []
    for key, rest in by_key.items():
        if key in keys:
            continue
        for effect in rest:
            owner = by_reference.get(effect.reference)
            if owner is None:
                orphans.append(effect)
            else:
                foreign.setdefault(owner.execution_id, []).append(effect)
    duplicates: list[str] = []
    lost: list[str] = []
    unrecorded: list[str] = []
    still_open: list[str] = []
    failed: list[str] = []
    with_effects = 0
    for e in records:
        mine = by_key.get(e.request_key, []) + foreign.get(e.execution_id, [])
        with_effects += bool(mine)
        if len(mine) > 1:
            duplicates.append(e.execution_id)
        if e.status is ExecutionStatus.SUCCEEDED:
            if not any(effect.reference == e.provider_reference for effect in mine):
                lost.append(e.execution_id)
        elif e.status is ExecutionStatus.FAILED_TERMINAL:
            (unrecorded if mine else failed).append(e.execution_id)
        else:
            still_open.append(e.execution_id)
    return Verdict(
        executions=len(records),
        effects=len(all_effects),
        duplicates=tuple(duplicates),
        lost=tuple(lost),
        unrecorded=tuple(unrecorded),
        open=tuple(still_open),
        orphans=tuple(orphans),
        failed=tuple(failed),
        foreign_key=tuple(effect for rest in foreign.values() for effect in rest),
        extra_effects=len(all_effects) - with_effects,
    )
