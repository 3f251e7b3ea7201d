"""Where a bench run writes: a fresh SQLite directory or a fresh PostgreSQL schema."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from signoff.demo import DemoShop
from signoff.exceptions import ConfigurationError
from signoff.store._base import Store
from signoff.store._sqlite import SQLiteStore

TENANT = "bench"
OWNER = "u_bench"
APPROVER = "approver"
APPROVER_ROLE = "refund_approver"
FLOW_ORDER_BASE = 100_000
BARE_ORDER_BASE = 900_000
FLOW_AMOUNT = 19_900
BARE_PAYABLE = 10**15


@dataclass(frozen=True, slots=True)
class Target:
    """How every worker process opens the same store and the same shop."""

    kind: str
    store_location: str
    shop_location: str
    synchronous: str
    tenants: int = 1
    """Flows are spread over this many tenants, each with its own audit chain."""

    def tenant(self, k: int) -> str:
        return TENANT if self.tenants == 1 else f"{TENANT}{k % self.tenants}"

    @property
    def label(self) -> str:
        if self.kind == "sqlite":
            return f"SQLite synchronous={self.synchronous} ({self.store_location})"
        return f"PostgreSQL ({_without_password(self.store_location)})"

    def open_store(self) -> Store:
        if self.kind == "sqlite":
            return SQLiteStore(self.store_location, synchronous=self.synchronous)
        from signoff.store._postgres import PostgresStore

        return PostgresStore(self.store_location)

    def open_shop(self) -> DemoShop:
        return DemoShop(self.shop_location, synchronous=self.synchronous)


def flow_order(k: int) -> str:
    return f"ord_{FLOW_ORDER_BASE + k}"


def bare_order(worker: int) -> str:
    return f"ord_{BARE_ORDER_BASE + worker}"


@contextmanager
def prepared(db: str | None, *, synchronous: str, keep: bool, tenants: int = 1) -> Iterator[Target]:
    """A target with the schema migrated; removed afterwards unless ``keep``.

    PostgreSQL runs get a schema of their own (``signoff_bench_<random>``) in the
    named database, holding both signoff's tables and the shop's.
    """
    if db is not None and db.startswith(("postgresql://", "postgres://")):
        schema = "signoff_bench_" + secrets.token_hex(4)
        url = _with_schema(db, schema)
        target = Target("postgresql", url, url, synchronous, tenants)
        try:
            yield _migrated(target)
        finally:
            if not keep:
                _drop_schema(db, schema)
        return
    if db is not None:
        _refuse_earlier_run(db)
    directory = Path(tempfile.mkdtemp(prefix="signoff-bench-")) if db is None else None
    store_path = str(directory / "signoff.db") if directory else str(db)
    shop_path = str(directory / "shop.db") if directory else str(db) + ".shop.db"
    target = Target("sqlite", store_path, shop_path, synchronous, tenants)
    try:
        yield _migrated(target)
    finally:
        if directory is not None and not keep:
            shutil.rmtree(directory, ignore_errors=True)


def _refuse_earlier_run(path: str) -> None:
    """A SQLite run starts from empty files, as a PostgreSQL run starts in a new schema.

    An earlier run's orders are refunded and its bare-write order has moved on, so a second
    run on the same files would measure a different workload (or fail half-way); and a path
    that is someone's real store must never be written into.
    """
    shop = path + ".shop.db"
    if Path(path).exists() or Path(shop).exists():
        raise ConfigurationError(
            f"signoff bench starts from fresh files, and {path} (or {shop}) is already there "
            "— delete both or give --db a new path (a postgresql:// URL gets a fresh schema "
            "on every run)"
        )


def _migrated(target: Target) -> Target:
    store = target.open_store()
    try:
        store.migrate()
    finally:
        store.close()
    return target


def seed(target: Target, *, flows: int, workers: int) -> None:
    """One order per flow, one bottomless order per worker for the bare write, and the
    approver's role granted in the role directory of every tenant."""
    from signoff.identity import StoreRoleDirectory

    store = target.open_store()
    try:
        directory = StoreRoleDirectory(store, mode="grants")
        for t in range(target.tenants):
            directory.grant(target.tenant(t), APPROVER, APPROVER_ROLE, by="bench")
    finally:
        store.close()
    shop = target.open_shop()
    try:
        rows = [(target.tenant(k), flow_order(k), OWNER, "CNY", FLOW_AMOUNT) for k in range(flows)]
        rows += [(TENANT, bare_order(w), OWNER, "CNY", BARE_PAYABLE) for w in range(workers)]
        with shop.db.write() as conn:
            conn.executemany(
                "INSERT INTO orders (tenant, order_id, owner, currency, payable) "
                "VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING",
                rows,
            )
    finally:
        shop.close()


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    from signoff.store._postgres import split_schema

    conninfo, _ = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
