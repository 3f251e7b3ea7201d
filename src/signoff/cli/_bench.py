"""`signoff bench`: full flows per second next to the bare write, and their ratio."""

from __future__ import annotations

import click

from signoff._paths import is_postgres
from signoff.bench import BenchReport, run_bench
from signoff.cli._options import DATABASE


@click.command()
@click.option(
    "--db",
    "db",
    type=DATABASE,
    default=None,
    help="postgresql://… (a fresh schema per run) or a SQLite path (default: a temporary file).",
)
@click.option("--flows", default=1000, show_default=True, type=click.IntRange(min=1))
@click.option("--workers", default=4, show_default=True, type=click.IntRange(min=1, max=64))
@click.option(
    "--synchronous",
    default="FULL",
    show_default=True,
    type=click.Choice(["OFF", "NORMAL", "FULL", "EXTRA"], case_sensitive=False),
    help="SQLite only: PRAGMA synchronous for both databases.",
)
@click.option(
    "--tenants",
    default=1,
    show_default=True,
    type=click.IntRange(min=1, max=1000),
    help="Spread the flows over this many tenants (each tenant has one audit chain).",
)
@click.option("--keep", is_flag=True, help="Keep the bench database or schema afterwards.")
def bench(
    db: str | None, flows: int, workers: int, synchronous: str, tenants: int, keep: bool
) -> None:
    """Run propose → approve → execute flows with W worker processes against the demo shop.

    Prints flows/s and p50/p99 per phase, the bare write (the demo order's
    conditional UPDATE, one per commit) measured in the same run on the same
    store, and, last, the ratio flows/s ÷ (bare commits/s ÷ commits per flow).
    """
    if flows < workers:
        raise click.BadParameter("give every worker at least one flow", param_hint="--flows")
    if db is not None and is_postgres(db):
        # A SQLite path must not exist yet (bench/_target.py says why), so it is not opened here.
        from signoff.cli._checks import check_writable
        from signoff.store import open_store

        with open_store(db) as store:
            check_writable(store, db)
    report = run_bench(
        db,
        flows=flows,
        workers=workers,
        synchronous=synchronous.upper(),
        keep=keep,
        tenants=tenants,
        progress=lambda line: click.echo(f"… {line}", err=True),
    )
    for line in render(report):
        click.echo(line)


def render(report: BenchReport) -> list[str]:
    c = report.counts
    lines = [
        f"store: {report.target}",
        f"workers: {report.workers}  flows: {report.flows}  tenants: {report.tenants}",
        f"{'phase':<10} {'count':>7} {'p50 ms':>9} {'p99 ms':>9}",
    ]
    for phase in report.phases.values():
        lines.append(f"{phase.name:<10} {phase.count:>7} {phase.p50_ms:>9.2f} {phase.p99_ms:>9.2f}")
    lines += [
        f"flows/s: {report.flows_per_second:.1f} ({report.flows} flows in "
        f"{report.flow_seconds:.2f} s)",
        f"bare commits/s: {report.bare_commits_per_second:.1f} ({report.bare_commits} commits in "
        f"{report.bare_seconds:.2f} s, before and after the flows)",
        f"commits per flow: {report.commits_per_flow:.2f} "
        f"(signoff {c.signoff_writes / report.flows:.2f} "
        f"+ provider {c.shop_writes / report.flows:.2f}); "
        f"read-only transactions per flow: {report.reads_per_flow:.2f}",
        f"round trips per flow: {report.trips_per_flow:.2f} "
        f"(signoff {c.signoff_trips / report.flows:.2f} "
        f"+ provider {c.shop_trips / report.flows:.2f}; statements, BEGIN and COMMIT)",
        *report.checks,
        f"flows/s ÷ (bare commits/s ÷ 4 durable commits): {report.durable_ratio:.3f}",
        f"ratio flows/s ÷ (bare commits/s ÷ commits per flow): {report.ratio:.3f}",
    ]
    return lines
