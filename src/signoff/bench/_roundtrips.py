"""Count round trips per flow: every statement a worker sends, BEGIN and COMMIT included.

PostgreSQL: each statement psycopg sends (``Cursor.execute``/``executemany``) and
each command it sends on its own (the implicit ``BEGIN``, ``COMMIT``, ``ROLLBACK``);
in psycopg's ordinary (non-pipeline) mode each one waits for its answer, so each
is one round trip. SQLite: each statement the library runs (its trace callback),
``BEGIN`` and ``COMMIT`` included — calls into the library rather than network
trips, counted the same way so the two stores compare.

Who sent a statement (signoff's store or the provider's database) is the block it
runs in (:class:`~signoff.bench._counting.CountingStore`,
``CountingShopDatabase``), kept in a context variable. The counters are installed
by patching the driver in a bench worker process, which runs nothing else.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

Owner = Literal["signoff", "shop"]
_owner: contextvars.ContextVar[Owner | None] = contextvars.ContextVar("owner", default=None)


@contextmanager
def owned_by(owner: Owner) -> Iterator[None]:
    """Attribute the statements sent inside the block to ``owner``."""
    token = _owner.set(owner)
    try:
        yield
    finally:
        _owner.reset(token)


def install(count: Callable[[Owner], None]) -> None:
    """Call ``count(owner)`` for every statement sent from now on in this process."""

    def counted() -> None:
        owner = _owner.get()
        if owner is not None:
            count(owner)

    _install_sqlite(counted)
    _install_postgres(counted)


def _install_sqlite(counted: Callable[[], None]) -> None:
    from signoff import _sqlite_file

    opened = _sqlite_file._Handle.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        opened(self, *args, **kwargs)
        self.conn.set_trace_callback(lambda _statement: counted())

    _sqlite_file._Handle.__init__ = init  # type: ignore[method-assign]


def _install_postgres(counted: Callable[[], None]) -> None:
    try:
        import psycopg
        from psycopg import _connection_base
    except ImportError:  # no [postgres] extra: nothing to count there
        return
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany
    command = _connection_base.BaseConnection._exec_command

    def counted_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted()
        return execute(self, *args, **kwargs)

    def counted_executemany(self: Any, query: Any, params_seq: Any, **kwargs: Any) -> Any:
        params_seq = list(params_seq)
        for _ in params_seq:
            counted()
        return executemany(self, query, params_seq, **kwargs)

    def counted_command(self: Any, *args: Any, **kwargs: Any) -> Any:
        counted()
        return command(self, *args, **kwargs)

    psycopg.Cursor.execute = counted_execute  # type: ignore[method-assign]
    psycopg.Cursor.executemany = counted_executemany  # type: ignore[method-assign]
    setattr(_connection_base.BaseConnection, "_exec_command", counted_command)  # noqa: B010
