"""Storage backends behind one interface."""

from __future__ import annotations

from signoff.store._base import Store
from signoff.store._sql import SqlTransaction
from signoff.store._sqlite import SQLiteStore


def open_store(url: str, *, migrate: bool = True) -> Store:
    """``sqlite:///path``, a plain file path, or ``postgresql://…``."""
    if url.startswith(("postgresql://", "postgres://")):
        from signoff.store._postgres import PostgresStore  # optional dependency

        store: Store = PostgresStore(url)
    else:
        store = SQLiteStore(url.removeprefix("sqlite:///").removeprefix("sqlite://"))
    if migrate:
        store.migrate()
    return store


__all__ = ["SQLiteStore", "SqlTransaction", "Store", "open_store"]
