"""The store interface the gate depends on; backends implement it."""

from __future__ import annotations

import abc
from contextlib import AbstractContextManager

from signoff.store._q_audit import EventSeal
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
    event_seal: EventSeal | None = None
    """Authenticates every audit event this process appends, with a MAC key the database
    never holds (set by the gate that signs: ``Gate(..., proof=...)``); None appends events
    no signer will ever cover."""

    @abc.abstractmethod
    def transaction(self) -> AbstractContextManager[SqlTransaction]: ...

    @abc.abstractmethod
    def read(self) -> AbstractContextManager[SqlTransaction]: ...

    def step(self) -> AbstractContextManager[SqlTransaction]:
        """A write step whose whole write is one statement (``SqlTransaction.record_*``,
        ``consume_and_start``): on PostgreSQL that statement commits by itself (one round
        trip, no BEGIN or COMMIT); elsewhere an ordinary write transaction."""
        return self.transaction()

    def peek(self) -> AbstractContextManager[SqlTransaction]:
        """A step's read before its write: each statement reads on its own (no BEGIN or
        COMMIT where the backend allows it). For reads that one statement answers
        (``read_for_decision``, ``read_for_execution``) and whose write re-checks what they
        relied on; anything that needs several statements to agree uses :meth:`read`."""
        return self.read()

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
