"""The `signoff` command group: demo, audit verify, db upgrade here; the rest load lazily."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

from signoff import __version__
from signoff.exceptions import SignoffError, StoreError
from signoff.store import Store

DEFAULT_DB = "signoff.db"
DB_HELP = "Database URL or SQLite path (env SIGNOFF_DATABASE_URL)."


# Commands whose modules pull in heavy dependencies (FastAPI, the MCP SDK) load on use,
# so `signoff reconcile` or `signoff audit verify` start without importing a web stack.
LAZY_COMMANDS = {
    "bench": "signoff.cli._bench:bench",
    "chaos": "signoff.cli._chaos:chaos",
    "dev-token": "signoff.cli._serve:dev_token",
    "mcp": "signoff.cli._agents:mcp_command",
    "notify": "signoff.cli._notify:notify",
    "openapi": "signoff.cli._openapi:openapi",
    "reconcile": "signoff.cli._reconcile:reconcile",
    "serve": "signoff.cli._serve:serve",
    "tools": "signoff.cli._agents:tools",
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = LAZY_COMMANDS.get(cmd_name)
        if spec is None:
            return super().get_command(ctx, cmd_name)
        module_name, _, attribute = spec.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
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

    with open_existing_store(db) as store:
        report = verify_audit(store)
    if report.ok:
        click.echo(f"audit chain intact: {report.events} events in {report.tenants} tenant chains")
        return
    click.echo(f"audit chain BROKEN at {report.first_bad}", err=True)
    sys.exit(1)


def open_existing_store(url: str) -> Store:
    """Open a store that must already hold a signoff schema; never create one by accident."""
    from signoff.store import open_store

    is_postgres = url.startswith(("postgresql://", "postgres://"))
    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if not is_postgres and not Path(path).is_file():
        raise StoreError(f"no database file at {path}")
    store = open_store(url, migrate=False)
    if store.schema_version() == 0:
        store.close()
        raise StoreError(f"{url} holds no signoff schema; run `signoff db upgrade --db {url}`")
    return store


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


def main() -> None:
    try:
        cli(standalone_mode=True)
    except SignoffError as exc:
        click.echo(f"error [{exc.code}]: {exc.message}", err=True)
        sys.exit(2)
