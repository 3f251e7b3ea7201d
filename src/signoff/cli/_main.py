"""The `signoff` command group: demo, audit verify, db upgrade here; the rest load lazily."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from signoff import __version__
from signoff.cli._errors import debug_requested, report
from signoff.cli._options import DATABASE
from signoff.exceptions import StoreError

if TYPE_CHECKING:
    from signoff.store import Store

DB_HELP = (
    "Database URL or SQLite path (env SIGNOFF_DATABASE_URL) "
    "[default: signoff.db in the data directory]."
)


# Commands whose modules pull in heavy dependencies (FastAPI, the MCP SDK) load on use,
# so `signoff reconcile` or `signoff audit verify` start without importing a web stack.
# `signoff --help` lists them from the short help here, importing none of them.
LAZY_COMMANDS = {
    "bench": ("signoff.cli._bench:bench", "Full flows next to the bare write; prints the ratio."),
    "channels": ("signoff.cli._channels:channels", "Link chat users (Slack) to people."),
    "chaos": ("signoff.cli._chaos:chaos", "SIGKILL real workers; count duplicates and losses."),
    "demo": ("signoff.cli._demo:demo", "Walk through the seed scenario and each refusal."),
    "dev-token": ("signoff.cli._serve:dev_token", "Print a development JWT (demo/dev only)."),
    "keys": ("signoff.cli._proof:keys", "Signing keys: generate, rotate, export JWKS or trust."),
    "mcp": ("signoff.cli._agents:mcp_command", "Serve the MCP tools over stdio."),
    "notify": ("signoff.cli._notify:notify", "Webhook and e-mail deliveries of audit events."),
    "openapi": ("signoff.cli._openapi:openapi", "Print the OpenAPI document of the HTTP API."),
    "policy": ("signoff.cli._policy:policy", "Check, diff and apply the policy file."),
    "reconcile": ("signoff.cli._reconcile:reconcile", "Settle stuck executions by lookup."),
    "roles": ("signoff.cli._roles:roles", "Grant, revoke and list roles in the directory."),
    "serve": ("signoff.cli._serve:serve", "Serve the HTTP API, the page and MCP."),
    "token": ("signoff.cli._proof:token", "Verify a signed confirmation token offline."),
    "tools": ("signoff.cli._agents:tools", "Print the tool definitions a model sees."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *LAZY_COMMANDS])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = LAZY_COMMANDS.get(cmd_name)
        if entry is None:
            return super().get_command(ctx, cmd_name)
        module_name, _, attribute = entry[0].partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return command

    def main(  # type: ignore[override]
        self, args: Sequence[str] | None = None, prog_name: str | None = None, **extra: Any
    ) -> NoReturn:
        """Run, turning every failure into one line (see ``cli/_errors.py``); always exits."""
        argv = list(sys.argv[1:] if args is None else args)
        extra.pop("standalone_mode", None)
        try:
            status = super().main(argv, prog_name, standalone_mode=False, **extra)
        except click.exceptions.Exit as done:
            status = done.exit_code
        except click.Abort:
            click.echo("error [aborted]: interrupted — nothing further was done", err=True)
            status = 130
        except Exception as exc:
            status = report(exc, debug=debug_requested(argv, dict(os.environ)))
        sys.exit(status if isinstance(status, int) else 0)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """List every command; lazy ones by their short help, without importing them."""
        rows = []
        for name in self.list_commands(ctx):
            entry = LAZY_COMMANDS.get(name)
            command = None if entry else super().get_command(ctx, name)
            if entry is None and (command is None or command.hidden):
                continue
            rows.append((name, entry[1] if entry else command.get_short_help_str()))  # type: ignore[union-attr]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="signoff")
@click.option(
    "--debug", is_flag=True, expose_value=False, help="Print tracebacks (env SIGNOFF_DEBUG=1)."
)
def cli() -> None:
    """Human confirmation for AI agents' write operations.

    Every failure is one line `error [code]: what happened — what to do`, exit 2
    (1 when a check ran and failed).
    """


@cli.group()
def audit() -> None:
    """Inspect the tamper-evident audit log."""


@audit.command("verify")
@click.option(
    "--db", "db", type=DATABASE, envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP
)
@click.option("--bundle", default=None, help="Verify an exported bundle offline (no database).")
@click.option("--receipt", default=None, help="Verify one signed receipt offline.")
@click.option("--trust", default=None, help="The trust file (`signoff keys export-trust`).")
@click.option("--jwks", default=None, help="Trusted public keys only (no origins, no witnesses).")
@click.option(
    "--checkpoint",
    "checkpoints",
    multiple=True,
    help="A checkpoint note you already hold; what you verify must be consistent with it.",
)
@click.option("--allow-uncovered", is_flag=True, help="Report events no checkpoint covers.")
@click.option("--proposal", default=None, help="The proposal id the proof must be for.")
@click.option("--digest", default=None, help="The args digest (sha256 hex) it must prove.")
@click.option("--args", "args_file", default=None, help="A JSON file of the canonical arguments.")
@click.option(
    "--require-evidence",
    type=click.Choice(["idp", "device", "any"]),
    default=None,
    help="Fail approvals vouched for by less: idp > device > any (signoff's word alone).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the offline report as JSON.")
def audit_verify(
    db: str | None,
    bundle: str | None,
    receipt: str | None,
    trust: str | None,
    jwks: str | None,
    checkpoints: tuple[str, ...],
    allow_uncovered: bool,
    proposal: str | None,
    digest: str | None,
    args_file: str | None,
    require_evidence: str | None,
    as_json: bool,
) -> None:
    """Exit 0 when every tenant's chain is intact; otherwise name the first bad event.

    With --bundle or --receipt, check signed checkpoints, proofs and approvals
    offline instead, under the trust root you pass (--trust or --jwks, never the
    file's own keys), and print what was proven. With --db and a trust root,
    also check each stored checkpoint against the chain.
    """
    from signoff.cli._proof import expectation, trust_root

    root = trust_root(jwks, trust)
    if bundle is not None or receipt is not None:
        from signoff.cli._proof import verify_offline

        verify_offline(
            bundle,
            receipt,
            root,
            held_files=checkpoints,
            allow_uncovered=allow_uncovered,
            expect=expectation(proposal, digest, args_file),
            require_evidence=require_evidence,
            as_json=as_json,
        )
        return
    from signoff._paths import default_database_url
    from signoff.gate._gate import verify_audit

    with open_existing_store(db or default_database_url()) as store:
        report = verify_audit(store)
        signed = None
        if root is not None:
            from signoff.cli._proof import verify_database

            signed = verify_database(store, root)
    if not report.ok:
        click.echo(f"audit chain BROKEN at {report.first_bad}", err=True)
        sys.exit(1)
    click.echo(f"audit chain intact: {report.events} events in {report.tenants} tenant chains")
    if signed is None:
        click.echo(
            "  note: without --trust or --jwks only the chain was checked: a recomputed"
            " history or a cut tail looks intact"
        )
        return
    for finding in signed.findings:
        click.echo(f"BROKEN {finding}", err=True)
    click.echo(
        f"  {signed.checkpoints} signed checkpoints match the chain; {signed.covered} events"
        f" covered, {signed.uncovered} not yet"
    )
    if not signed.ok:
        sys.exit(1)


KEYS_HELP = "Signing key file (env SIGNOFF_SIGNING_KEYS_FILE)."
LOG_NAME_HELP = "Log name in origins (env SIGNOFF_LOG_NAME) [default: public URL, else key file]."
STATE_HELP = "The signer's state directory (env SIGNOFF_SIGNER_STATE) [default: <keys>.state]."


@audit.command("export")
@click.option(
    "--db", "db", type=DATABASE, envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP
)
@click.option("--tenant", required=True, help="The tenant whose log to export.")
@click.option("--since", default=0, type=int, help="Size of a checkpoint to continue from.")
@click.option("--out", required=True, help="The bundle file to write.")
@click.option("--keys", "keys_file", default=None, help=KEYS_HELP)
@click.option("--log-name", envvar="SIGNOFF_LOG_NAME", default=None, help=LOG_NAME_HELP)
@click.option("--state", envvar="SIGNOFF_SIGNER_STATE", default=None, help=STATE_HELP)
def audit_export(
    db: str | None,
    tenant: str,
    since: int,
    out: str,
    keys_file: str | None,
    log_name: str | None,
    state: str | None,
) -> None:
    """Write a tenant's events, signed checkpoints and proofs to one file."""
    from signoff._paths import default_database_url
    from signoff.cli._proof import export

    export(db or default_database_url(), tenant, since, out, keys_file, log_name, state)


@audit.command("checkpoint")
@click.option(
    "--db", "db", type=DATABASE, envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP
)
@click.option("--keys", "keys_file", default=None, help=KEYS_HELP)
@click.option("--log-name", envvar="SIGNOFF_LOG_NAME", default=None, help=LOG_NAME_HELP)
@click.option("--state", envvar="SIGNOFF_SIGNER_STATE", default=None, help=STATE_HELP)
def audit_checkpoint(
    db: str | None, keys_file: str | None, log_name: str | None, state: str | None
) -> None:
    """Sign a checkpoint at the head of every tenant's log now (say, from a cron job)."""
    from signoff._paths import default_database_url
    from signoff.cli._proof import checkpoint_now

    checkpoint_now(db or default_database_url(), keys_file, log_name, state)


@audit.command("init-signer")
@click.option("--db", "db", envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP)
@click.option("--keys", "keys_file", default=None, help=KEYS_HELP)
@click.option("--log-name", envvar="SIGNOFF_LOG_NAME", default=None, help=LOG_NAME_HELP)
@click.option("--state", envvar="SIGNOFF_SIGNER_STATE", default=None, help=STATE_HELP)
@click.option("--tenant", "tenants", multiple=True, help="Only this tenant's log (repeatable).")
@click.option(
    "--adopt-head",
    is_flag=True,
    help="Also vouch for every event up to the head (events without an authenticator too).",
)
def audit_init_signer(
    db: str | None,
    keys_file: str | None,
    log_name: str | None,
    state: str | None,
    tenants: tuple[str, ...],
    adopt_head: bool,
) -> None:
    """Set the signer's view of each log from the store's verified checkpoints (audited).

    For an upgrade, a lost signer state, or a log the signer refused after you
    investigated; it overwrites what the signer remembered.
    """
    from signoff._paths import default_database_url
    from signoff.cli._proof import init_signer

    init_signer(db or default_database_url(), keys_file, log_name, state, tenants, adopt_head)


def open_existing_store(url: str) -> Store:
    """Open a store that must already hold a signoff schema; never create one by accident."""
    from signoff._paths import is_postgres, redacted
    from signoff.store import open_store

    path = url.removeprefix("sqlite:///").removeprefix("sqlite://")
    if not is_postgres(url) and not Path(path).is_file():
        raise StoreError(f"no database file at {path} — check --db (or SIGNOFF_DATABASE_URL)")
    store = open_store(url, migrate=False)
    if store.schema_version() == 0:
        store.close()
        shown = redacted(url)
        raise StoreError(
            f"{shown} holds no signoff schema — run `signoff db upgrade --db {shown}` first"
        )
    from signoff.cli._seal import seal_from_environment

    return seal_from_environment(store)


@cli.group()
def db() -> None:
    """Manage the database schema."""


@db.command("upgrade")
@click.option(
    "--db", "url", type=DATABASE, envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP
)
def db_upgrade(url: str | None) -> None:
    """Apply pending migrations; idempotent; refuses a schema newer than this signoff."""
    from signoff._paths import default_database_url
    from signoff.store import open_store

    with open_store(url or default_database_url(), migrate=False) as store:
        before = store.schema_version()
        after = store.migrate()
    click.echo(f"schema version {before} -> {after}")


def main(args: Sequence[str] | None = None) -> None:
    """The console script: every failure one line, exit 2; tracebacks only with --debug."""
    cli.main(args, prog_name="signoff")
