"""The chaos run: SIGKILL real workers at each named point, restart, reconcile, compare.

For every point, ``kills`` times: confirm a ¥1.00 refund on a fresh order,
start a worker process on it, wait until it reports reaching the point, and
``kill -9`` it. Then, once the dead workers' leases have lapsed, start
``reconcilers`` real ``signoff reconcile --once`` processes at the same time,
and compare each execution record with the provider's ledger and the order.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from signoff._model import Execution, Proposal
from signoff.chaos._world import AMOUNT_MINOR, FIRST_ORDER, TENANT, ChaosWorld, open_world
from signoff.demo import LedgerEntry
from signoff.gate._hooks import HookPoint
from signoff.testing._effects import Effect, check_exactly_once

WORKER_TIMEOUT_S = 60.0
RECONCILE_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class PointFigures:
    """What the kills at one point left behind, after reconciliation.

    ``duplicates``: refunds beyond one per confirmed operation (or under a key
    no execution owns). ``lost``: confirmed operations that ended without their
    refund. ``mismatched``: refunds whose record says failed. ``open``:
    executions still not terminal. ``reconciled``: executions the reconciler
    processes handled. ``double_handled``: executions that two reconciler
    processes both reported handling.
    """

    point: str
    kills: int
    missed: int
    effects: int
    duplicates: int
    lost: int
    mismatched: int
    open: int
    reconciled: int
    double_handled: int
    seconds: float

    @property
    def ok(self) -> bool:
        return not (
            self.missed
            or self.duplicates
            or self.lost
            or self.mismatched
            or self.open
            or self.double_handled
        )


@dataclass(frozen=True, slots=True)
class ChaosReport:
    store: str
    points: tuple[PointFigures, ...]
    audit_ok: bool

    @property
    def ok(self) -> bool:
        return self.audit_ok and all(p.ok for p in self.points)


@dataclass(frozen=True, slots=True)
class _Kill:
    proposal: Proposal
    reached: bool
    detail: str


@dataclass(frozen=True, slots=True)
class _Setup:
    db: str
    shop: str
    lease: float


def run_chaos(
    db: str | None = None,
    *,
    kills: int = 50,
    points: Sequence[HookPoint] = tuple(HookPoint),
    reconcilers: int = 2,
    parallel: int = 2,
    lease: float = 0.5,
    progress: Callable[[str], None] | None = None,
) -> ChaosReport:
    """Run the chaos experiment on a fresh database (SQLite file or PostgreSQL schema)."""
    if kills < 1 or reconcilers < 1 or parallel < 1 or lease <= 0:
        raise ValueError("kills, reconcilers and parallel must be ≥ 1; lease > 0")
    say = progress or (lambda line: None)
    with _fresh_databases(db) as (fresh_db, shop):
        setup = _Setup(fresh_db, shop, lease)
        world = open_world(setup.db, setup.shop, lease=timedelta(seconds=lease))
        try:
            figures = []
            for index, point in enumerate(points):
                first = FIRST_ORDER + index * kills
                figures.append(_run_point(world, setup, point, first, kills, reconcilers, parallel))
                say(_line(figures[-1]))
            audit_ok = world.gate.verify_audit().ok
        finally:
            world.close()
    kind = "postgresql" if _is_postgres(fresh_db) else "sqlite"
    return ChaosReport(kind, tuple(figures), audit_ok)


def _run_point(
    world: ChaosWorld,
    setup: _Setup,
    point: HookPoint,
    first_order: int,
    kills: int,
    reconcilers: int,
    parallel: int,
) -> PointFigures:
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        results = list(
            pool.map(lambda n: _kill_one(world, setup, point, first_order + n), range(kills))
        )
    proposals = [r.proposal for r in results]
    for detail in {r.detail for r in results if not r.reached}:
        sys.stderr.write(f"chaos: a worker did not reach {point.value}: {detail}\n")
    time.sleep(setup.lease + 0.2)  # the dead workers' leases lapse
    handled: Counter[str] = Counter()
    for _ in range(RECONCILE_ROUNDS):
        handled.update(_reconcile_round(setup, reconcilers))
        if not _open_executions(world, proposals):
            break
        time.sleep(setup.lease)
    return _compare(world, point, results, handled, time.monotonic() - started)


def _kill_one(world: ChaosWorld, setup: _Setup, point: HookPoint, order_number: int) -> _Kill:
    proposal, token = world.confirmed_refund(order_number)
    job = {
        "db": setup.db,
        "shop": setup.shop,
        "lease": setup.lease,
        "point": point.value,
        "proposal_id": proposal.proposal_id,
        "token": token,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "signoff.chaos._worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert worker.stdin is not None and worker.stdout is not None
    watchdog = threading.Timer(WORKER_TIMEOUT_S, worker.kill)
    watchdog.start()
    try:
        worker.stdin.write(json.dumps(job) + "\n")
        worker.stdin.flush()
        line = worker.stdout.readline().strip()
        reached = line.startswith("reached ")
        if reached:
            os.kill(worker.pid, signal.SIGKILL)
        _, err = worker.communicate()
    finally:
        watchdog.cancel()
    return _Kill(proposal, reached, line if reached else f"{line} {err.strip()[-500:]}")


def _reconcile_round(setup: _Setup, count: int) -> Counter[str]:
    """``count`` reconciler processes at once; how many of them handled each execution."""
    command = [
        sys.executable, "-m", "signoff", "reconcile", "--once", "--json",
        "--older-than", "0", "--limit", "100000", "--lease", "60",
        "--db", setup.db, "--demo", "--demo-shop", setup.shop,
        "--directory", "signoff.chaos._world:chaos_directory",
    ]  # fmt: skip
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603
        for _ in range(count)
    ]
    handled: Counter[str] = Counter()
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            sys.stderr.write(f"chaos: a reconciler failed ({process.returncode}): {err[-2000:]}\n")
        handled.update({json.loads(line)["execution_id"] for line in out.splitlines() if line})
    return handled


def _executions(world: ChaosWorld, proposals: Sequence[Proposal]) -> list[Execution]:
    with world.store.read() as tx:
        found = [tx.execution_for_proposal(p.proposal_id) for p in proposals]
    return [e for e in found if e is not None]


def _open_executions(world: ChaosWorld, proposals: Sequence[Proposal]) -> int:
    return sum(1 for e in _executions(world, proposals) if not e.status.is_terminal)


def _compare(
    world: ChaosWorld,
    point: HookPoint,
    results: Sequence[_Kill],
    handled: Counter[str],
    seconds: float,
) -> PointFigures:
    proposals = [r.proposal for r in results if r.reached]
    orders = {p.arguments["order_id"] for p in proposals}
    entries = [e for e in world.provider.ledger(TENANT) if e.order_id in orders]
    verdict = check_exactly_once(
        _executions(world, proposals), [Effect(e.request_key, e.reference) for e in entries]
    )
    return PointFigures(
        point=point.value,
        kills=len(proposals),
        missed=len(results) - len(proposals),
        effects=len(entries),
        duplicates=len(verdict.duplicates) + len(verdict.orphans) + _overdrawn(world, entries),
        lost=len(verdict.lost) + len(verdict.failed) + len(proposals) - verdict.executions,
        mismatched=len(verdict.unrecorded),
        open=len(verdict.open),
        reconciled=len(handled),
        double_handled=sum(1 for n in handled.values() if n > 1),
        seconds=seconds,
    )


def _overdrawn(world: ChaosWorld, entries: Sequence[LedgerEntry]) -> int:
    """Orders whose refunded total is more than their ledger shows (a refund outside it)."""
    per_order = Counter(e.order_id for e in entries)
    overdrawn = 0
    for order_id, count in per_order.items():
        order = world.shop.order(TENANT, order_id)
        if order is None or order.refunded != count * AMOUNT_MINOR:
            overdrawn += 1
    return overdrawn


@contextmanager
def _fresh_databases(db: str | None) -> Iterator[tuple[str, str]]:
    """A new SQLite file (or PostgreSQL schema) for the run, and the shop's own file."""
    with tempfile.TemporaryDirectory(prefix="signoff-chaos-") as scratch:
        if db is None:
            db = str(Path(scratch) / "chaos.db")
        if not _is_postgres(db):
            path = Path(db.removeprefix("sqlite:///").removeprefix("sqlite://"))
            if path.exists():
                raise FileExistsError(f"{path} exists; the chaos run needs a fresh database")
            yield str(path), f"{path}.shop.sqlite"
            return
        schema = f"chaos_{uuid.uuid4().hex[:12]}"
        try:
            yield _with_schema(db, schema), str(Path(scratch) / "shop.sqlite")
        finally:
            _drop_schema(db, schema)


def _is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))


def _drop_schema(url: str, schema: str) -> None:
    import psycopg
    from psycopg import sql

    from signoff.store._postgres import split_schema

    conninfo, _ = split_schema(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


HEADER = (
    f"{'point':<24}{'kills':>6}{'effects':>8}{'dup':>5}{'lost':>5}"
    f"{'mismatch':>9}{'open':>5}{'reconciled':>11}{'double':>7}{'missed':>7}{'secs':>7}"
)


def _line(f: PointFigures) -> str:
    return (
        f"{f.point:<24}{f.kills:>6}{f.effects:>8}{f.duplicates:>5}{f.lost:>5}"
        f"{f.mismatched:>9}{f.open:>5}{f.reconciled:>11}{f.double_handled:>7}{f.missed:>7}"
        f"{f.seconds:>7.1f}"
    )
