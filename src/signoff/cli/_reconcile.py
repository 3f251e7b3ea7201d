"""`signoff reconcile`: settle stuck executions by lookup, once or as a long-running worker."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import timedelta
from typing import Any

import click

from signoff._directory import RoleDirectory
from signoff._paths import default_database_url, demo_shop_file
from signoff._references import build_from_reference, call_factory, import_reference
from signoff.catalog._catalog import Catalog
from signoff.cli._checks import check_writable
from signoff.cli._options import DATABASE
from signoff.cli._seal import seal_from_environment
from signoff.cli._signals import stop_on_signals
from signoff.exceptions import CatalogImportError, InvalidReference
from signoff.gate._gate import Gate
from signoff.gate._reconcile import Reconciled
from signoff.gate._reconciler import ReconcileLoop
from signoff.identity import StoreRoleDirectory
from signoff.store import Store, open_store


def demo_shop_location(db: str, shop: str | None) -> str:
    """``--demo-shop``, or where ``serve --demo`` keeps it (next to SQLite, else the data dir)."""
    return shop if shop is not None else demo_shop_file(db)


@contextmanager
def open_catalog(
    db: str, *, demo: bool, shop: str | None, catalog_ref: str | None
) -> Iterator[Catalog]:
    if demo == (catalog_ref is not None):
        raise click.UsageError("name the tools to reconcile: --demo or --catalog MODULE:ATTR")
    if catalog_ref is not None:
        yield build_from_reference(
            catalog_ref, "--catalog", Catalog, "a signoff.Catalog", broken=CatalogImportError
        )
        return
    from signoff.demo import DemoShop, demo_catalog

    demo_shop = DemoShop(demo_shop_location(db, shop))
    try:
        yield demo_catalog(demo_shop)
    finally:
        demo_shop.close()


def load_directory(reference: str | None) -> RoleDirectory | None:
    if reference is None:
        return None
    directory = import_reference(reference, "--directory")
    if inspect.isclass(directory) or not callable(getattr(directory, "holds_role", None)):
        directory = call_factory(directory, reference, "--directory", "a RoleDirectory")
    if not callable(getattr(directory, "holds_role", None)):
        raise InvalidReference(
            f"--directory: {reference} has no holds_role method — name a RoleDirectory"
        )
    return directory  # type: ignore[no-any-return]


def store_directory(store: Store, mode: str) -> RoleDirectory | None:
    """The directory `signoff serve` consults, in this store (PROTOCOL rule 11)."""
    if mode == "off":
        return None
    return StoreRoleDirectory(store, mode="revocations" if mode == "revocations" else "grants")


def _printer(as_json: bool) -> Any:
    def print_pass(done: list[Reconciled]) -> None:
        for r in done:
            if as_json:
                record = {"execution_id": r.execution_id, "action": r.action, "status": r.status}
                click.echo(json.dumps(record))
            else:
                click.echo(f"{r.execution_id}  {r.action.value:<13} -> {r.status.value}")

    return print_pass


@click.command("reconcile")
@click.option(
    "--db",
    type=DATABASE,
    envvar="SIGNOFF_DATABASE_URL",
    default=None,
    help="Database URL or SQLite path (env SIGNOFF_DATABASE_URL) "
    "[default: signoff.db in the data directory].",
)
@click.option("--once", is_flag=True, help="One pass over what is stuck now, then exit.")
@click.option(
    "--older-than",
    "older_than",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    metavar="SECONDS",
    help="Leave executions touched more recently than this to their worker.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=10.0,
    show_default=True,
    metavar="SECONDS",
    help="Pause between passes (worker mode).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Executions claimed per pass.",
)
@click.option(
    "--lease",
    type=click.FloatRange(min=0.05),
    default=300.0,
    show_default=True,
    metavar="SECONDS",
    help="How long a claim keeps other reconcilers away.",
)
@click.option(
    "--catalog",
    "catalog_ref",
    envvar="SIGNOFF_CATALOG",
    metavar="MODULE:ATTR",
    help="Your tools: a signoff.Catalog, or a callable returning one.",
)
@click.option(
    "--directory",
    "directory_ref",
    metavar="MODULE:ATTR",
    help="Your own role directory (a RoleDirectory or a callable) instead of the store's.",
)
@click.option(
    "--role-directory",
    "role_mode",
    envvar="SIGNOFF_ROLE_DIRECTORY",
    type=click.Choice(["grants", "revocations", "off"], case_sensitive=False),
    default=None,
    help="How the store's role directory is consulted, as `signoff serve` does "
    "[default: grants; revocations with --demo].",
)
@click.option("--demo", is_flag=True, help="Reconcile the demo refund tool.")
@click.option(
    "--demo-shop",
    "shop",
    metavar="LOCATION",
    help="The demo shop's database [default: <db>.shop.sqlite].",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per handled execution.")
def reconcile(
    db: str | None,
    once: bool,
    older_than: float,
    interval: float,
    limit: int,
    lease: float,
    catalog_ref: str | None,
    directory_ref: str | None,
    role_mode: str | None,
    demo: bool,
    shop: str | None,
    as_json: bool,
) -> None:
    """Settle stuck executions: look each up by request key; never re-run blindly.

    Claims `prepared`/`running` executions whose lease lapsed and `unknown` ones
    (one reconciler each, however many run), asks the provider, and records
    succeeded, failed_terminal, another attempt with the same request key, or
    needs_attention.
    """  # fmt: skip
    db = db or default_database_url()
    with ExitStack() as stack:
        store = seal_from_environment(stack.enter_context(open_store(db)))
        check_writable(store, db)
        catalog = stack.enter_context(
            open_catalog(db, demo=demo, shop=shop, catalog_ref=catalog_ref)
        )
        gate = Gate(
            catalog,
            store,
            directory=load_directory(directory_ref)
            or store_directory(store, role_mode or ("revocations" if demo else "grants")),
            lease=timedelta(seconds=lease),
        )
        loop = ReconcileLoop(
            gate,
            interval=timedelta(seconds=interval),
            older_than=timedelta(seconds=older_than),
            limit=limit,
            on_pass=_printer(as_json),
        )
        if once:
            done = loop.run_once()
            if not as_json:
                click.echo(f"reconciled {len(done)} executions", err=True)
            return
        stop = threading.Event()
        with stop_on_signals(stop):
            loop.run(stop)
