"""Connections, dialects and the transaction base every query mixin builds on."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
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
    step_functions: bool = False
    """Each write step is one call of a server-side function (PostgreSQL, migration 6)."""

    def sql(self, statement: str) -> str:
        if self.placeholder == "?":
            return statement
        return statement.replace("?", self.placeholder)


class PremiseFailed(Exception):
    """A write step found that what its read relied on changed since: nothing was written.

    The conditional updates and inserts of a step (a version, a token still
    ``issued``, an idempotency key still free, role entries as they were read)
    are its premises; when one does not hold, the step's transaction rolls back
    and the caller reads again, answering from what is there now.
    """

    def __init__(self, premise: str) -> None:
        super().__init__(f"premise no longer holds: {premise}")
        self.premise = premise


RoleKey = tuple[str, str, str]
"""(tenant, subject, role)."""


class SqlBase:
    """One open transaction: a connection, its dialect and the statement runner."""

    def __init__(
        self, conn: Connection, dialect: Dialect, seal: Callable[[Any], str] | None = None
    ) -> None:
        self._conn = conn
        self._dialect = dialect
        self._seal = seal
        """Authenticates each appended audit event (the gate's MAC key), or None."""
        self._heads: dict[str, tuple[int, str]] = {}
        """Chain heads this transaction appended to: a second append needs no head read."""
        self._roles_read: dict[RoleKey, bool | None] = {}
        """Role entries read here (granted, revoked, never heard of): a later write's premises."""
        self._roles_known: dict[RoleKey, bool | None] = {}
        """Role entries a combined read already fetched: answered without a statement."""
        self._known: dict[tuple[str, ...], Any] = {}
        """Rows a combined read already fetched (proposal, token, idempotency record),
        by what a later read would ask for: answered without a statement."""

    @property
    def dialect(self) -> str:
        return self._dialect.name

    def run(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        return self._conn.execute(self._dialect.sql(statement), params)


def _dump(value: Any) -> str:
    """The stored JSON text of a column (and of an audit event's ``data``, which is hashed)."""
    return _ENCODE(value)


# What `json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)` does,
# without building a new encoder on each of the ~11 calls a flow makes (same bytes:
# tests/test_json_bytes.py keeps that call as the reference).
_ENCODE = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False).encode
