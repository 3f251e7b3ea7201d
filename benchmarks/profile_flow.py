"""Where one flow's time goes, on one store, in one process: the figures behind PERFORMANCE.md.

    .venv/bin/python benchmarks/profile_flow.py [--db postgresql://…] [--flows 1000]

SQLite: for each database file, the writer lock's hold per transaction split
into the body (statements and the Python between them) and COMMIT, against
the bare write's. PostgreSQL: round trips per flow (statements, BEGIN,
COMMIT), client CPU and, when the server runs on this machine, server CPU.
It wraps the SQLite and psycopg entry points to count; use it to diagnose,
not to quote throughput (`signoff bench` does that).
"""

from __future__ import annotations

import argparse
import collections
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import signoff._sqlite_file as sqlite_file
from signoff.bench._target import prepared, seed
from signoff.bench._worker import _Worker

WARMUP = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=None)
    parser.add_argument("--flows", type=int, default=1000)
    options = parser.parse_args()
    postgres = options.db is not None and options.db.startswith("postgres")
    probe = _PostgresProbe() if postgres else _SQLiteProbe()
    with prepared(options.db, synchronous="FULL", keep=False) as target:
        seed(target, flows=options.flows + WARMUP, workers=1)
        worker = _Worker(target, 0)
        try:
            worker.flows(list(range(options.flows, options.flows + WARMUP)))
            _measure("flow", options.flows, probe, lambda: worker.flows(list(range(options.flows))))
            _measure("bare write", 5 * options.flows, probe, lambda: worker.bare(5 * options.flows))
        finally:
            worker.close()


def _measure(label: str, count: int, probe: _Probe, run: Callable[[], object]) -> None:
    probe.reset()
    server = _server_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    after = _server_cpu()
    per = 1e3 / count
    line = f"{label}: wall {wall * per:.3f} ms, client CPU {cpu * per:.3f} ms"
    if server is not None and after is not None and isinstance(probe, _PostgresProbe):
        line += f", server CPU {(after - server) * per:.3f} ms"
    print(f"{line} (per {label}, {count} runs)")
    for detail in probe.lines(count):
        print(f"  {detail}")


class _Probe:
    def reset(self) -> None: ...

    def lines(self, count: int) -> list[str]:
        return []


class _SQLiteProbe(_Probe):
    """Times each write transaction: waiting for the writer lock, the body, COMMIT."""

    def __init__(self) -> None:
        self.seconds: collections.defaultdict[tuple[str, str], float] = collections.defaultdict(
            float
        )
        self.transactions: collections.Counter[str] = collections.Counter()
        probe = self

        @contextmanager
        def write(self: sqlite_file.SQLiteFile) -> Iterator[Any]:
            handle = self._handle()
            name = Path(self.path).name
            t0 = time.perf_counter()
            with handle.writer():
                t1 = time.perf_counter()
                handle.conn.execute("BEGIN IMMEDIATE")
                try:
                    yield handle.conn
                except BaseException:
                    handle.conn.execute("ROLLBACK")
                    raise
                t2 = time.perf_counter()
                handle.conn.execute("COMMIT")
                t3 = time.perf_counter()
            probe.seconds[(name, "lock wait")] += t1 - t0
            probe.seconds[(name, "body")] += t2 - t1
            probe.seconds[(name, "COMMIT")] += t3 - t2
            probe.transactions[name] += 1

        sqlite_file.SQLiteFile.write = write  # type: ignore[method-assign]

    def reset(self) -> None:
        self.seconds.clear()
        self.transactions.clear()

    def lines(self, count: int) -> list[str]:
        out = []
        for (name, part), seconds in sorted(self.seconds.items()):
            per_tx = seconds / self.transactions[name]
            out.append(
                f"{name:<11} {part:<10} {per_tx * 1e6:7.0f} us per transaction "
                f"x {self.transactions[name] / count:.0f} = {seconds / count * 1e3:.3f} ms"
            )
        return out


class _PostgresProbe(_Probe):
    """Counts round trips: statements, and the BEGIN/COMMIT psycopg sends on its own."""

    def __init__(self) -> None:
        import psycopg
        from psycopg import _connection_base

        self.trips: collections.Counter[str] = collections.Counter()
        probe = self
        execute = psycopg.Connection.execute
        command = _connection_base.BaseConnection._exec_command

        def counted_execute(self: Any, query: Any, params: Any = None, **kw: Any) -> Any:
            probe.trips["statements"] += 1
            return execute(self, query, params, **kw)

        def counted_command(self: Any, sql: Any, result_format: Any = 0) -> Any:
            probe.trips[bytes(sql).split()[0].decode()] += 1
            return command(self, sql, result_format)

        psycopg.Connection.execute = counted_execute  # type: ignore[method-assign]
        setattr(_connection_base.BaseConnection, "_exec_command", counted_command)  # noqa: B010

    def reset(self) -> None:
        self.trips.clear()

    def lines(self, count: int) -> list[str]:
        parts = ", ".join(f"{k} {v / count:.1f}" for k, v in sorted(self.trips.items()))
        return [f"round trips {sum(self.trips.values()) / count:.1f}: {parts}"]


def _server_cpu() -> float | None:
    """CPU seconds of every local postgres process, or None when none is visible."""
    ticks, seen = 0, False
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.index("(") + 1 : stat.rindex(")")].startswith("postgres"):
            fields = stat[stat.rindex(")") + 2 :].split()
            ticks += int(fields[11]) + int(fields[12])
            seen = True
    return ticks / os.sysconf("SC_CLK_TCK") if seen else None


if __name__ == "__main__":
    main()
