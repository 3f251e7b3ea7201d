"""Connections, dialects and the transaction base every query mixin builds on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    placeholder: str
    for_update: str
    skip_locked: str
    writable_cte: bool = False
    """``WITH x AS (INSERT …) UPDATE …`` runs both in one statement (PostgreSQL)."""

    def sql(self, statement: str) -> str:
        if self.placeholder == "?":
            return statement
        return statement.replace("?", self.placeholder)


class SqlBase:
    """One open transaction: a connection, its dialect and the statement runner."""

    def __init__(self, conn: Connection, dialect: Dialect) -> None:
        self._conn = conn
        self._dialect = dialect
        self._heads: dict[str, tuple[int, str]] = {}
        """Chain heads this transaction appended to: a second append needs no head read."""

    @property
    def dialect(self) -> str:
        return self._dialect.name

    def run(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(self._dialect.sql(statement), params)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
