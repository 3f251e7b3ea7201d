"""Latency percentiles per phase."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Phase:
    name: str
    count: int
    p50_ms: float
    p99_ms: float


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(
    per_worker: Iterable[dict[str, list[float]]], names: Sequence[str]
) -> dict[str, Phase]:
    merged: dict[str, list[float]] = {name: [] for name in names}
    for latencies in per_worker:
        for name in names:
            merged[name].extend(latencies.get(name, ()))
    phases = {}
    for name, values in merged.items():
        values.sort()
        phases[name] = Phase(
            name, len(values), 1000 * percentile(values, 50), 1000 * percentile(values, 99)
        )
    return phases
