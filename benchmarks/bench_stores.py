"""The figures in docs/PERFORMANCE.md: `signoff bench` on each store, repeated, medians.

    .venv/bin/python benchmarks/bench_stores.py [--flows 1000] [--repeat 3]
        [--postgres postgresql://postgres@127.0.0.1:5432/test]

Each configuration runs ``--repeat`` times (each a fresh database or schema);
the table shows the median of each figure, and the spread of the ratio.
The machine is shared, so the spread is part of the result.
"""

from __future__ import annotations

import argparse
import os
import statistics

from signoff.bench import BenchReport, run_bench

DEFAULT_POSTGRES = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def configurations(postgres: str | None) -> list[tuple[str, str | None, int, int]]:
    """(label, db, workers, tenants)."""
    runs: list[tuple[str, str | None, int, int]] = [
        ("SQLite FULL, 1 worker", None, 1, 1),
        ("SQLite FULL, 2 workers", None, 2, 1),
        ("SQLite FULL, 4 workers", None, 4, 1),
    ]
    if postgres:
        runs += [
            ("PostgreSQL, 1 worker", postgres, 1, 1),
            ("PostgreSQL, 8 workers", postgres, 8, 1),
            ("PostgreSQL, 8 workers, 8 tenants", postgres, 8, 8),
        ]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flows", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES, help="empty to skip PostgreSQL")
    options = parser.parse_args()
    print(
        f"{'configuration':<34}{'flows/s':>9}{'flow p50':>10}{'flow p99':>10}"
        f"{'bare/s':>9}{'commits':>9}{'ratio':>8}{'ratio range':>15}"
    )
    for label, db, workers, tenants in configurations(options.postgres or None):
        reports = [
            run_bench(db, flows=options.flows, workers=workers, tenants=tenants)
            for _ in range(options.repeat)
        ]
        print(_row(label, reports), flush=True)


def _row(label: str, reports: list[BenchReport]) -> str:
    def median(values: list[float]) -> float:
        return statistics.median(values)

    ratios = [r.ratio for r in reports]
    return (
        f"{label:<34}"
        f"{median([r.flows_per_second for r in reports]):>9.1f}"
        f"{median([r.phases['flow'].p50_ms for r in reports]):>10.2f}"
        f"{median([r.phases['flow'].p99_ms for r in reports]):>10.2f}"
        f"{median([r.bare_commits_per_second for r in reports]):>9.0f}"
        f"{median([r.commits_per_flow for r in reports]):>9.2f}"
        f"{median(ratios):>8.3f}"
        f"{f'{min(ratios):.3f}-{max(ratios):.3f}':>15}"
    )


if __name__ == "__main__":
    main()
