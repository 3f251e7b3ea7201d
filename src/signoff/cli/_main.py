"""`signoff` commands: demo, audit verify, db upgrade."""

from __future__ import annotations

import sys

import click

from signoff import __version__
from signoff.exceptions import SignoffError

DEFAULT_DB = "signoff.db"
DB_HELP = "Database URL or SQLite path (env SIGNOFF_DATABASE_URL)."


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="signoff")
def cli() -> None:
    """Human confirmation for AI agents' write operations."""


@cli.command()
@click.option(
    "--db", "db", default=None, help="SQLite file for the demo (default: a temporary one)."
)
def demo(db: str | None) -> None:
    """Walk through the seed scenario: propose, preview, approve, execute, and each refusal."""
    from signoff.cli._demo import run_demo

    sys.exit(0 if run_demo(db) else 1)


@cli.group()
def audit() -> None:
    """Inspect the tamper-evident audit log."""


@audit.command("verify")
@click.option("--db", "db", envvar="SIGNOFF_DATABASE_URL", default=DEFAULT_DB, help=DB_HELP)
def audit_verify(db: str) -> None:
    """Exit 0 when every tenant's chain is intact; otherwise name the first bad event."""
    from signoff.gate._gate import verify_audit
    from signoff.store import open_store

    with open_store(db, migrate=False) as store:
        report = verify_audit(store)
    if report.ok:
        click.echo(f"audit chain intact: {report.events} events in {report.tenants} tenant chains")
        return
    click.echo(f"audit chain BROKEN at {report.first_bad}", err=True)
    sys.exit(1)


@cli.group()
def db() -> None:
    """Manage the database schema."""


@db.command("upgrade")
@click.option("--db", "url", envvar="SIGNOFF_DATABASE_URL", default=DEFAULT_DB, help=DB_HELP)
def db_upgrade(url: str) -> None:
    """Apply pending migrations; idempotent; refuses a schema newer than this signoff."""
    from signoff.store import open_store

    with open_store(url, migrate=False) as store:
        before = store.schema_version()
        after = store.migrate()
    click.echo(f"schema version {before} -> {after}")


from signoff.cli._bench import bench  # noqa: E402

cli.add_command(bench)


from signoff.cli._serve import dev_token, serve  # noqa: E402

cli.add_command(serve)
cli.add_command(dev_token)


from signoff.cli._reconcile import reconcile  # noqa: E402

cli.add_command(reconcile)


from signoff.cli._chaos import chaos  # noqa: E402

cli.add_command(chaos)


from signoff.cli._agents import mcp_command, tools  # noqa: E402

cli.add_command(tools)
cli.add_command(mcp_command)


def main() -> None:
    try:
        cli(standalone_mode=True)
    except SignoffError as exc:
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)
        sys.exit(2)
