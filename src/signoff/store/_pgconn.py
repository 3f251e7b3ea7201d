"""Pooled PostgreSQL transactions (psycopg 3), shared by the store and the demo shop.

Each process opens its own pool on first use, so a forked child never touches
its parent's connections; a lost connection or an exhausted pool becomes
:class:`~signoff.exceptions.StoreUnavailable`.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from signoff.exceptions import InvalidDatabaseUrl, MissingExtra, StoreUnavailable

try:
    import psycopg
    from psycopg import IsolationLevel
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # depends on how signoff was installed
    raise MissingExtra(
        f"PostgreSQL support is not installed ({missing}) — pip install 'signoff[postgres]'"
    ) from missing

SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")
# One attempt, a few seconds: a wrong host, port, role or database is reported at once.
CONNECT_TIMEOUT_S = 5
URL_HINT = "write postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?schema=NAME]"


def split_schema(url: str) -> tuple[str, str | None]:
    """``postgresql://…?schema=x`` → (the URL without it, ``"x"``)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port, raising for a bad one
    except ValueError as exc:
        raise InvalidDatabaseUrl(f"cannot parse the PostgreSQL URL: {exc} — {URL_HINT}") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in query if key == "schema"]
    rest = urlencode([(key, value) for key, value in query if key != "schema"])
    return urlunsplit(parts._replace(query=rest)), (schemas[-1] if schemas else None)


class PostgresConnections:
    """A per-process psycopg pool on one database (and schema)."""

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
            raise InvalidDatabaseUrl(
                f"schema name {self.schema!r} is not a plain lower-case identifier — "
                "use letters, digits and _ (e.g. ?schema=signoff)"
            )
        try:
            conninfo_to_dict(conninfo)
        except psycopg.ProgrammingError as exc:
            raise InvalidDatabaseUrl(f"{_cause(exc)} — {URL_HINT}") from None
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
                self._probe()
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

    def _probe(self) -> None:
        """One direct connection before the pool opens: fail fast, with libpq's reason."""
        try:
            psycopg.connect(self._conninfo, connect_timeout=CONNECT_TIMEOUT_S).close()
        except psycopg.Error as exc:
            raise StoreUnavailable(
                f"cannot connect to PostgreSQL: {_cause(exc)} — check the host, port, role, "
                "password, database and sslmode in --db (or SIGNOFF_DATABASE_URL)"
            ) from exc

    @contextmanager
    def transaction(
        self, isolation: IsolationLevel, *, read_only: bool
    ) -> Iterator[psycopg.Connection[Any]]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        with self._checkout(autocommit=False) as conn:
            if conn.isolation_level is not isolation or conn.read_only is not read_only:
                # Local attributes: psycopg folds them into this transaction's BEGIN.
                conn.isolation_level = isolation
                conn.read_only = read_only
            yield conn

    @contextmanager
    def statements(self) -> Iterator[psycopg.Connection[Any]]:
        """Autocommit: each statement is its own transaction (single-statement reads)."""
        with self._checkout(autocommit=True) as conn:
            yield conn

    @contextmanager
    def _checkout(self, *, autocommit: bool) -> Iterator[psycopg.Connection[Any]]:
        try:
            with self._connections().connection() as conn:
                if conn.autocommit is not autocommit:
                    conn.autocommit = autocommit
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


def _cause(exc: BaseException) -> str:
    """libpq's message on one line, without the connection string it may echo."""
    text = " ".join(str(exc).split())
    return text.removeprefix("connection failed: ")
