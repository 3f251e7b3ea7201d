"""One SQLite file shared by threads and processes, with a single writer at a time.

Python 3.11 bundles SQLite 3.40.1, which has the WAL-reset corruption bug
(fixed in 3.51.3) that can strike when several connections write or
checkpoint at once. So no two connections ever write at the same time here:
every write transaction, and every close (which may checkpoint), holds an
exclusive ``flock`` on ``<db>.lock``. Each thread's connection opens its own
descriptor, so the lock serializes threads as well as processes. Readers take
no lock; WAL gives them a consistent snapshot.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from signoff.exceptions import StoreUnavailable

BUSY_TIMEOUT_MS = 30_000
SYNCHRONOUS_LEVELS = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})


class _Handle:
    """A thread's connection and its descriptor on the writer lock file."""

    def __init__(self, path: str, synchronous: str) -> None:
        self.lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        self.conn = sqlite3.connect(
            path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
        )
        with self.writer():
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(f"PRAGMA synchronous={synchronous}")
        self.conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        self.conn.execute("PRAGMA foreign_keys=ON")

    @contextmanager
    def writer(self) -> Iterator[None]:
        fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self.lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        with self.writer():
            self.conn.close()
        os.close(self.lock_fd)


class SQLiteFile:
    """Per-thread connections to one database file; ``write()`` and ``read()`` transactions."""

    def __init__(self, path: str, *, synchronous: str = "FULL") -> None:
        level = synchronous.upper()
        if level not in SYNCHRONOUS_LEVELS:
            raise ValueError(f"unknown synchronous level {synchronous!r}")
        self.path = path
        self.synchronous = level
        self._local = threading.local()
        self._handles: list[_Handle] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _handle(self) -> _Handle:
        handle: _Handle | None = getattr(self._local, "handle", None)
        if handle is not None and self._pid == os.getpid():
            return handle
        try:
            handle = _Handle(self.path, self.synchronous)
        except (sqlite3.Error, OSError) as exc:
            raise StoreUnavailable(f"cannot open SQLite database {self.path}: {exc}") from exc
        with self._lock:
            if self._pid != os.getpid():
                # Forked: the parent's connections are not ours to use or close.
                self._handles, self._pid = [], os.getpid()
                self._local = threading.local()
            self._handles.append(handle)
        self._local.handle = handle
        return handle

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        handle = self._handle()
        with handle.writer():
            handle.conn.execute("BEGIN IMMEDIATE")
            try:
                yield handle.conn
            except BaseException:
                handle.conn.execute("ROLLBACK")
                raise
            handle.conn.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        handle = self._handle()
        handle.conn.execute("BEGIN")
        try:
            yield handle.conn
        finally:
            handle.conn.execute("COMMIT")

    @contextmanager
    def statements(self) -> Iterator[sqlite3.Connection]:
        """No transaction around them: each statement reads (or writes) on its own."""
        yield self._handle().conn

    def close(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, []
            mine = self._pid == os.getpid()
        if mine:
            for handle in handles:
                handle.close()
        self._local = threading.local()
