"""`signoff chaos`: kill -9 real workers at each named point, reconcile, count the damage."""

from __future__ import annotations

import sys

import click

from signoff.chaos._processes import ANYWHERE
from signoff.cli._options import DATABASE
from signoff.gate._hooks import HookPoint

POINTS = (*(p.value for p in HookPoint), ANYWHERE)


@click.command("chaos")
@click.option(
    "--db",
    type=DATABASE,
    default=None,
    metavar="URL",
    help="postgresql://… (a fresh schema is made, then dropped) or a new SQLite path "
    "[default: a temporary SQLite file].",
)
@click.option(
    "--kills", type=click.IntRange(min=1), default=50, show_default=True, help="SIGKILLs per point."
)
@click.option(
    "--point",
    "points",
    multiple=True,
    type=click.Choice(POINTS),
    help="Only these points (repeatable) [default: the four named points and "
    "'anywhere', a random moment of the execute call].",
)
@click.option(
    "--reconcilers",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="`signoff reconcile --once` processes started at the same time after the kills.",
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Worker processes running at once.",
)
@click.option(
    "--lease",
    type=click.FloatRange(min=0.05),
    default=0.5,
    show_default=True,
    metavar="SECONDS",
    help="The workers' lease; reconciling starts when it lapses.",
)
@click.option("--seed", type=int, default=None, help="Seed for the 'anywhere' kill delays.")
def chaos(
    db: str | None,
    kills: int,
    points: tuple[str, ...],
    reconcilers: int,
    parallel: int,
    lease: float,
    seed: int | None,
) -> None:
    """Start real worker processes, SIGKILL each at a named point, restart, reconcile.

    Then compare the provider's ledger with the execution records and print, per
    point: kills, operations, refunds, duplicate refunds, lost refunds, record
    mismatches, executions left non-terminal, executions the reconcilers handled,
    and how many two reconcilers both handled. Exit status 1 unless all are clean.
    """  # fmt: skip
    from signoff.chaos import HEADER, run_chaos

    store = "postgresql" if db and db.startswith(("postgresql://", "postgres://")) else "sqlite"
    if db is not None and db.startswith(("postgresql://", "postgres://")):
        from signoff.store import open_store

        with open_store(db, migrate=False) as probe:  # reachable? (chaos makes its own schema)
            probe.schema_version()
    click.echo(f"signoff chaos: store={store} kills/point={kills} reconcilers={reconcilers}")
    click.echo(HEADER)
    try:
        report = run_chaos(
            db,
            kills=kills,
            points=points or POINTS,
            reconcilers=reconcilers,
            parallel=parallel,
            lease=lease,
            seed=seed,
            progress=click.echo,
        )
    except FileExistsError as exc:
        raise click.UsageError(str(exc)) from exc
    figures = report.points
    for f in figures:
        if f.landed:
            where = ", ".join(f"{stage}: {n}" for stage, n in f.landed)
            click.echo(f"{f.point}: kills landed after {where}")
    click.echo(
        f"total: {sum(p.kills for p in figures)} kills, "
        f"{sum(p.duplicates for p in figures)} duplicates, {sum(p.lost for p in figures)} lost, "
        f"{sum(p.open for p in figures)} non-terminal; "
        f"audit chain {'intact' if report.audit_ok else 'BROKEN'}"
    )
    if not report.ok:
        click.echo("chaos run FAILED", err=True)
        sys.exit(1)
