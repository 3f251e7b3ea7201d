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

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

try:
    import psycopg
    from psycopg import IsolationLevel, sql
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover - depends on how signoff was installed
    raise ImportError("PostgreSQL support needs: pip install 'signoff[postgres]'") from missing

from signoff.exceptions import SchemaTooNew, StoreUnavailable
from signoff.store._base import Store
from signoff.store._migrations import MIGRATIONS, SCHEMA_VERSION
from signoff.store._sql import Dialect, SqlTransaction

POSTGRESQL = Dialect(
    name="postgresql",
    placeholder="%s",
    for_update="FOR UPDATE",
    skip_locked="FOR UPDATE SKIP LOCKED",
)
SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# One key for every signoff migration in a database: DDL runs one migrator at a time.
MIGRATION_LOCK = 0x5159_0FF0
CONNECT_TIMEOUT_S = 10


def split_schema(url: str) -> tuple[str, str | None]:
    """``postgresql://…?schema=x`` → (the URL without it, ``"x"``)."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    return urlunsplit(parts._replace(query=rest)), (schemas[-1] if schemas else None)


class PostgresConnections:
    """A per-process psycopg pool on one database (and schema); errors become StoreUnavailable.

    Each process opens its own pool on first use: a forked child never touches
    its parent's connections.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
    ) -> None:
        conninfo, url_schema = split_schema(url)
        self.schema = schema or url_schema
        if self.schema is not None and not SCHEMA_NAME.fullmatch(self.schema):
            raise ValueError(f"schema name {self.schema!r} is not a plain lower-case identifier")
        self._conninfo = conninfo
        self._sizes = (min_size, max_size)
        self._timeout = timeout
        self._lock = threading.Lock()
        self._pool: ConnectionPool | None = None
        self._pid = os.getpid()

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        if self.schema is not None:
            conn.execute("SELECT set_config('search_path', %s, false)", (f'"{self.schema}"',))
            conn.commit()

    def _connections(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pid = os.getpid()
                self._pool = ConnectionPool(
                    self._conninfo,
                    min_size=self._sizes[0],
                    max_size=self._sizes[1],
                    timeout=self._timeout,
                    kwargs={"connect_timeout": CONNECT_TIMEOUT_S},
                    configure=self._configure,
                    name=f"signoff-{self.schema or 'public'}",
                    open=True,
                )
            return self._pool

    @contextmanager
    def connection(
        self, isolation: IsolationLevel, *, read_only: bool
    ) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        try:
            with self._connections().connection() as conn:
                if conn.isolation_level is not isolation or conn.read_only is not read_only:
                    # Local attributes: psycopg folds them into this transaction's BEGIN.
                    conn.isolation_level = isolation
                    conn.read_only = read_only
                yield conn
        except psycopg.errors.TransactionRollback:
            raise
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise StoreUnavailable(f"PostgreSQL store unavailable: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            mine = self._pid == os.getpid()
        if pool is not None and mine:
            pool.close()


class PostgresStore(Store):
    """``PostgresStore("postgresql://user@host/db?schema=signoff")``."""

    integrity_errors = (psycopg.errors.IntegrityError,)

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
        with self._db.connection(IsolationLevel.READ_COMMITTED, read_only=False) as conn:
            yield SqlTransaction(conn, POSTGRESQL)

    @contextmanager
    def read(self) -> Iterator[SqlTransaction]:
        with self._db.connection(IsolationLevel.REPEATABLE_READ, read_only=True) as conn:
            yield SqlTransaction(conn, POSTGRESQL)

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
            current = _schema_version(tx)
            if current > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"database schema {current} is newer than this signoff ({SCHEMA_VERSION})",
                    schema=current,
                )
            for version in range(current + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    tx.run(statement)
                tx.run(
                    "INSERT INTO signoff_meta (key, value) VALUES ('schema_version', ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(version),),
                )
        return SCHEMA_VERSION

    def ping(self) -> None:
        with self.read() as tx:
            tx.run("SELECT 1").fetchone()

    def close(self) -> None:
        self._db.close()


def _schema_version(tx: SqlTransaction) -> int:
    exists = tx.run("SELECT to_regclass('signoff_meta')").fetchone()
    if exists is None or exists[0] is None:
        return 0
    row = tx.run("SELECT value FROM signoff_meta WHERE key = 'schema_version'").fetchone()
    return 0 if row is None else int(row[0])
