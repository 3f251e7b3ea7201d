"""Where the demo shop keeps its rows: a SQLite file (default) or a PostgreSQL database.

Both hand out connections with ``execute(sql, params)`` and
``executemany(sql, rows)``; statements are written with ``?`` placeholders
(rewritten to ``%s`` for psycopg, so they hold no literal ``?`` or ``%``).
``read()`` is for single-statement reads: on PostgreSQL it runs in autocommit.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from signoff._sqlite_file import SQLiteFile

if TYPE_CHECKING:
    import psycopg


class ShopCursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class ShopConnection(Protocol):
    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> ShopCursor: ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> Any: ...


class ShopDatabase(Protocol):
    dialect: str

    def write(self) -> AbstractContextManager[ShopConnection]: ...

    def read(self) -> AbstractContextManager[ShopConnection]: ...

    def autocommit(self) -> AbstractContextManager[ShopConnection]:
        """Each statement commits on its own: the cheapest way to run a one-statement write."""
        ...

    def close(self) -> None: ...


class SQLiteShopDatabase(SQLiteFile):
    """The shop's own SQLite file; connections are plain ``sqlite3`` ones."""

    dialect = "sqlite"

    def autocommit(self) -> AbstractContextManager[sqlite3.Connection]:
        # A lone statement in SQLite still takes the writer lock and commits: the same as this.
        return self.write()


class _PostgresConnection:
    """A psycopg connection that speaks ``?`` placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> ShopCursor:
        return self._conn.execute(sql.replace("?", "%s"), parameters)

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]], /) -> None:
        with self._conn.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), rows)


class PostgresShopDatabase:
    """The shop's tables in a PostgreSQL database (``?schema=name`` selects a schema)."""

    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        from signoff.store._pgconn import PostgresConnections  # optional dependency

        self._db = PostgresConnections(url, max_size=4)
        self.schema = self._db.schema

    @contextmanager
    def write(self) -> Iterator[ShopConnection]:
        from psycopg import IsolationLevel

        with self._db.transaction(IsolationLevel.READ_COMMITTED, read_only=False) as conn:
            yield _PostgresConnection(conn)

    @contextmanager
    def read(self) -> Iterator[ShopConnection]:
        # The shop's reads are single statements: no BEGIN/COMMIT round trips around them.
        with self._db.statements() as conn:
            yield _PostgresConnection(conn)

    @contextmanager
    def autocommit(self) -> Iterator[ShopConnection]:
        with self._db.statements() as conn:
            yield _PostgresConnection(conn)

    def close(self) -> None:
        self._db.close()


def open_shop_database(location: str, *, synchronous: str = "FULL") -> ShopDatabase:
    if location.startswith(("postgresql://", "postgres://")):
        return PostgresShopDatabase(location)
    return SQLiteShopDatabase(location, synchronous=synchronous)
