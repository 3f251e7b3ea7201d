"""`signoff chaos`: kill -9 real workers at each named point, reconcile, count the damage."""

from __future__ import annotations

import sys

import click

from signoff.gate._hooks import HookPoint


@click.command("chaos")
@click.option(
    "--db",
    default=None,
    metavar="URL",
    help="postgresql://… (a fresh schema is made and dropped) or a new SQLite path "
    "[default: a temporary SQLite file].",
)
@click.option(
    "--kills",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="SIGKILLs per named point.",
)
@click.option(
    "--point",
    "points",
    multiple=True,
    type=click.Choice([p.value for p in HookPoint]),
    help="Only these points (repeatable) [default: all four].",
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
def chaos(
    db: str | None,
    kills: int,
    points: tuple[str, ...],
    reconcilers: int,
    parallel: int,
    lease: float,
) -> None:
    """Start real worker processes, SIGKILL each at a named point, restart, reconcile.

    Then compare the provider's ledger with the execution records and print, per
    point: kills, refunds, duplicate refunds, lost refunds, record mismatches,
    executions left non-terminal, executions the reconcilers handled and how
    many two reconcilers both handled. Exit status 1 unless all are clean.
    """  # fmt: skip
    from signoff.chaos import HEADER, run_chaos

    chosen = [HookPoint(p) for p in points] or list(HookPoint)
    store = "postgresql" if db and db.startswith(("postgresql://", "postgres://")) else "sqlite"
    click.echo(f"signoff chaos: store={store} kills/point={kills} reconcilers={reconcilers}")
    click.echo(HEADER)
    try:
        report = run_chaos(
            db,
            kills=kills,
            points=chosen,
            reconcilers=reconcilers,
            parallel=parallel,
            lease=lease,
            progress=click.echo,
        )
    except FileExistsError as exc:
        raise click.UsageError(str(exc)) from exc
    total_kills = sum(p.kills for p in report.points)
    dup = sum(p.duplicates for p in report.points)
    lost = sum(p.lost for p in report.points)
    still_open = sum(p.open for p in report.points)
    click.echo(
        f"total: {total_kills} kills, {dup} duplicates, {lost} lost, {still_open} non-terminal; "
        f"audit chain {'intact' if report.audit_ok else 'BROKEN'}"
    )
    if not report.ok:
        click.echo("chaos run FAILED", err=True)
        sys.exit(1)
