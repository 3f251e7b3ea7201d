"""What a chaos run reports, per point and overall."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PointFigures:
    """What the kills at one point left behind, after restart and reconciliation.

    ``kills``: workers killed with SIGKILL. ``runs``: confirmed operations
    started (for ``anywhere`` some finish before the kill lands). ``effects``:
    refunds in the provider's ledger for those operations. ``duplicates``:
    refunds beyond one per operation, under a key no execution owns, or money
    moved on an order beyond its ledger. ``lost``: operations that ended
    without their refund. ``mismatched``: refunds whose record says failed, or
    an order whose refunded total is short of its ledger. ``open``: executions
    still not terminal. ``reconciled``: executions the reconciler processes
    handled. ``double_handled``: executions two reconciler processes both
    reported handling. ``missed``: workers that never reached the point (or
    never started, for ``anywhere``).
    """

    point: str
    kills: int
    runs: int
    effects: int
    duplicates: int
    lost: int
    mismatched: int
    open: int
    reconciled: int
    double_handled: int
    missed: int
    seconds: float
    landed: tuple[tuple[str, int], ...] = ()
    """For ``anywhere``: how many kills landed after each stage of the execution."""

    @property
    def ok(self) -> bool:
        return not (
            self.missed
            or self.duplicates
            or self.lost
            or self.mismatched
            or self.open
            or self.double_handled
        )


@dataclass(frozen=True, slots=True)
class ChaosReport:
    store: str
    points: tuple[PointFigures, ...]
    audit_ok: bool

    @property
    def ok(self) -> bool:
        return self.audit_ok and all(p.ok for p in self.points)


HEADER = (
    f"{'point':<24}{'kills':>6}{'runs':>6}{'effects':>8}{'dup':>5}{'lost':>5}"
    f"{'mismatch':>9}{'open':>5}{'reconciled':>11}{'double':>7}{'missed':>7}{'secs':>7}"
)


def figures_line(f: PointFigures) -> str:
    return (
        f"{f.point:<24}{f.kills:>6}{f.runs:>6}{f.effects:>8}{f.duplicates:>5}{f.lost:>5}"
        f"{f.mismatched:>9}{f.open:>5}{f.reconciled:>11}{f.double_handled:>7}{f.missed:>7}"
        f"{f.seconds:>7.1f}"
    )
