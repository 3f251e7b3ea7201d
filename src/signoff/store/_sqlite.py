"""The embedded store: one SQLite file in WAL mode, one writer at a time (see _sqlite_file)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from signoff._sqlite_file import SQLiteFile
from signoff.exceptions import StoreUnavailable
from signoff.store._base import Store
from signoff.store._migrations import apply_migrations, schema_version_in
from signoff.store._sql import Dialect, SqlTransaction

SQLITE = Dialect(name="sqlite", placeholder="?", for_update="", skip_locked="")


class SQLiteStore(Store):
    """``SQLiteStore("signoff.db")``; ``synchronous`` is ``FULL`` by default."""

    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        self.path = str(Path(path))
        self.url = f"sqlite:///{self.path}"
        self._file = SQLiteFile(self.path, synchronous=synchronous)

    @contextmanager
    def transaction(self) -> Iterator[SqlTransaction]:
        with self._file.write() as conn:
            yield SqlTransaction(conn, SQLITE, self.event_seal)

    @contextmanager
    def read(self) -> Iterator[SqlTransaction]:
        with self._file.read() as conn:
            yield SqlTransaction(conn, SQLITE, self.event_seal)

    @contextmanager
    def peek(self) -> Iterator[SqlTransaction]:
        with self._file.statements() as conn:
            yield SqlTransaction(conn, SQLITE, self.event_seal)

    def schema_version(self) -> int:
        with self.read() as tx:
            return _schema_version(tx)

    def migrate(self) -> int:
        with self.transaction() as tx:
            tx.run("CREATE TABLE IF NOT EXISTS signoff_meta (key TEXT PRIMARY KEY, value TEXT)")
            return apply_migrations(tx, _schema_version(tx))

    def ping(self) -> None:
        try:
            with self.read() as tx:
                tx.run("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"SQLite store unavailable: {exc}") from exc

    def close(self) -> None:
        self._file.close()


def _schema_version(tx: SqlTransaction) -> int:
    return schema_version_in(
        tx, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'signoff_meta'"
    )
