"""The store interface the gate depends on; backends implement it."""

from __future__ import annotations

import abc
from contextlib import AbstractContextManager

from signoff.store._sql import SqlTransaction


class Store(abc.ABC):
    """A transactional home for proposals, tokens, executions and the audit chain.

    ``transaction()`` opens a write transaction whose conditional updates are
    the protocol's single-winner steps; ``read()`` opens a read-only one.
    Provider calls never happen while either is open.
    """

    url: str
    integrity_errors: tuple[type[Exception], ...] = ()
    """Exceptions the backend raises for a violated UNIQUE constraint."""
    transient_errors: tuple[type[Exception], ...] = ()
    """Deadlocks and serialization failures: the transaction is safe to run again."""

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[SqlTransaction]: ...

    @abc.abstractmethod
    def read(self) -> AbstractContextManager[SqlTransaction]: ...

    @abc.abstractmethod
    def migrate(self) -> int:
        """Bring the schema to the current version; return the version applied."""

    @abc.abstractmethod
    def schema_version(self) -> int: ...

    @abc.abstractmethod
    def ping(self) -> None:
        """Raise :class:`signoff.exceptions.StoreUnavailable` when unreachable."""

    @abc.abstractmethod
    def close(self) -> None: ...

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
