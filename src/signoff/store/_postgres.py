"""The shared store: PostgreSQL through a psycopg 3 connection pool, Read Committed.

Writes run at Read Committed: every single-winner step in ``_sql`` is a
conditional ``UPDATE … WHERE status = …`` whose row count names the winner,
and the audit head row is locked (``FOR UPDATE``) so that concurrent appends
form one chain per tenant. Reads run as ``REPEATABLE READ READ ONLY`` so a
multi-statement read (the audit chain and its heads) sees one snapshot.

A schema can be named with ``?schema=name`` in the URL or ``schema=``; tests
use it to isolate each run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

# _pgconn first: without the [postgres] extra it raises MissingExtra, naming the fix.
from signoff.store._pgconn import PostgresConnections, split_schema  # isort: skip

import psycopg
from psycopg import IsolationLevel, sql

from signoff.store._base import Store
from signoff.store._migrations import apply_migrations, schema_version_in
from signoff.store._sql import Dialect, SqlTransaction

POSTGRESQL = Dialect(
    name="postgresql",
    placeholder="%s",
    for_update="FOR UPDATE",
    skip_locked="FOR UPDATE SKIP LOCKED",
    step_functions=True,
)
# One key for every signoff migration in a database: DDL runs one migrator at a time.
MIGRATION_LOCK = 0x5159_0FF0

__all__ = ["POSTGRESQL", "PostgresStore", "split_schema"]


class PostgresStore(Store):
    """``PostgresStore("postgresql://user@host/db?schema=signoff")``."""

    integrity_errors = (psycopg.errors.IntegrityError,)
    transient_errors = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
    ) -> None:
        self.url = url
        self._db = PostgresConnections(
            url, schema=schema, min_size=min_size, max_size=max_size, timeout=timeout
        )
        self.schema = self._db.schema

    @contextmanager
    def transaction(self) -> Iterator[SqlTransaction]:
        with self._db.transaction(IsolationLevel.READ_COMMITTED, read_only=False) as conn:
            yield SqlTransaction(conn, POSTGRESQL, self.event_seal)

    @contextmanager
    def read(self) -> Iterator[SqlTransaction]:
        with self._db.transaction(IsolationLevel.REPEATABLE_READ, read_only=True) as conn:
            yield SqlTransaction(conn, POSTGRESQL, self.event_seal)

    @contextmanager
    def step(self) -> Iterator[SqlTransaction]:
        with self._db.statements() as conn:
            yield SqlTransaction(conn, POSTGRESQL, self.event_seal)

    @contextmanager
    def peek(self) -> Iterator[SqlTransaction]:
        with self._db.statements() as conn:
            yield SqlTransaction(conn, POSTGRESQL, self.event_seal)

    def schema_version(self) -> int:
        with self.read() as tx:
            return _schema_version(tx)

    def migrate(self) -> int:
        """Apply pending migrations in one transaction, one migrator at a time."""
        with self.transaction() as tx:
            tx.run("SELECT pg_advisory_xact_lock(?)", (MIGRATION_LOCK,))
            if self.schema is not None:
                create = sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self.schema)
                )
                tx.run(create.as_string())
            tx.run("CREATE TABLE IF NOT EXISTS signoff_meta (key TEXT PRIMARY KEY, value TEXT)")
            return apply_migrations(tx, _schema_version(tx))

    def ping(self) -> None:
        with self.read() as tx:
            tx.run("SELECT 1").fetchone()

    def close(self) -> None:
        self._db.close()


def _schema_version(tx: SqlTransaction) -> int:
    return schema_version_in(tx, "SELECT to_regclass('signoff_meta')")
