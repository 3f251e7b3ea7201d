"""The shop's own database: orders that refunds change. It stands for an external system."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.demo._db import ShopConnection, ShopDatabase, open_shop_database

_SQLITE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS orders (
        tenant TEXT NOT NULL,
        order_id TEXT NOT NULL,
        owner TEXT NOT NULL,
        currency TEXT NOT NULL,
        payable BIGINT NOT NULL,
        refunded BIGINT NOT NULL DEFAULT 0,
        version BIGINT NOT NULL DEFAULT 1,
        PRIMARY KEY (tenant, order_id)
    )""",
    """CREATE TABLE IF NOT EXISTS refunds (
        request_key TEXT PRIMARY KEY,
        reference TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        order_id TEXT NOT NULL,
        amount_minor BIGINT NOT NULL,
        currency TEXT NOT NULL,
        created_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
    )""",
    """CREATE TABLE IF NOT EXISTS provider_faults (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        mode TEXT NOT NULL
    )""",
)
_POSTGRES_SCHEMA = (
    _SQLITE_SCHEMA[0],
    """CREATE TABLE IF NOT EXISTS refunds (
        request_key TEXT PRIMARY KEY,
        reference TEXT NOT NULL UNIQUE,
        tenant TEXT NOT NULL,
        order_id TEXT NOT NULL,
        amount_minor BIGINT NOT NULL,
        currency TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
    )""",
    """CREATE TABLE IF NOT EXISTS provider_faults (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        mode TEXT NOT NULL
    )""",
)
# Shop processes starting at once create the tables one at a time.
_POSTGRES_DDL_LOCK = 0x5159_0FF1


@dataclass(frozen=True, slots=True)
class Order:
    tenant: str
    order_id: str
    owner: str
    currency: str
    payable: int
    refunded: int
    version: int


class DemoShop:
    """Orders and the provider's refund ledger, in a database of their own.

    ``path`` is a SQLite file (the default) or a ``postgresql://…`` URL, where
    ``?schema=name`` keeps the shop's tables in a schema of their own.
    """

    def __init__(self, path: str, *, synchronous: str = "FULL") -> None:
        self.path = path
        self.db: ShopDatabase = open_shop_database(path, synchronous=synchronous)
        with self.db.write() as conn:
            _create_tables(conn, self.db.dialect, getattr(self.db, "schema", None))

    def add_order(
        self, tenant: str, order_id: str, *, owner: str, payable: int, currency: str = "CNY"
    ) -> None:
        with self.db.write() as conn:
            conn.execute(
                "INSERT INTO orders (tenant, order_id, owner, currency, payable) "
                "VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING",
                (tenant, order_id, owner, currency, payable),
            )

    def order(self, tenant: str, order_id: str) -> Order | None:
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT tenant, order_id, owner, currency, payable, refunded, version "
                "FROM orders WHERE tenant = ? AND order_id = ?",
                (tenant, order_id),
            ).fetchone()
        return None if row is None else Order(*row)

    def touch_order(self, tenant: str, order_id: str) -> None:
        """Change the order outside signoff (a new version), as another system would."""
        with self.db.write() as conn:
            conn.execute(
                "UPDATE orders SET version = version + 1 WHERE tenant = ? AND order_id = ?",
                (tenant, order_id),
            )

    def ensure_table(self, ddl: str, *, lock_id: int) -> None:
        """Create a tool's own table once (``CREATE TABLE IF NOT EXISTS``).

        On PostgreSQL, shop processes starting at once create it one at a time
        under the advisory lock ``lock_id``.
        """
        with self.db.write() as conn:
            if getattr(self.db, "dialect", "sqlite") != "sqlite":
                conn.execute("SELECT pg_advisory_xact_lock(?)", (lock_id,))
            conn.execute(ddl)

    def close(self) -> None:
        self.db.close()


HIGH_RISK_ORDER = "ord_9200"
"""Seeded with ¥3,000.00 paid, so a refund of ¥1,000.00 or more (high risk) can be shown."""


def seed_demo_orders(shop: DemoShop) -> None:
    """acme: ord_1001…ord_1100 (¥199.00 each, paid by u_42) and ord_9200 (¥3,000.00, u_42);
    globex: ord_2001…ord_2010 (¥199.00 each, paid by u_77). Seeding again changes nothing."""
    with shop.db.write() as conn:
        rows = [("acme", f"ord_{n}", "u_42", "CNY", 19900) for n in range(1001, 1101)]
        rows.append(("acme", HIGH_RISK_ORDER, "u_42", "CNY", 300_000))
        rows += [("globex", f"ord_{n}", "u_77", "CNY", 19900) for n in range(2001, 2011)]
        conn.executemany(
            "INSERT INTO orders (tenant, order_id, owner, currency, payable) "
            "VALUES (?,?,?,?,?) ON CONFLICT DO NOTHING",
            rows,
        )


def _create_tables(conn: ShopConnection, dialect: str, schema: str | None) -> None:
    if dialect == "sqlite":
        for statement in _SQLITE_SCHEMA:
            conn.execute(statement)
        return
    conn.execute("SELECT pg_advisory_xact_lock(?)", (_POSTGRES_DDL_LOCK,))
    if schema is not None:
        # The name was checked against a plain-identifier pattern when the URL was read.
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    for statement in _POSTGRES_SCHEMA:
        conn.execute(statement)
