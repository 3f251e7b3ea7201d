"""The chaos run: SIGKILL real workers at each named point, restart, reconcile, compare.

For every point, ``kills`` times: confirm a ¥1.00 refund on a fresh order,
start a worker process on it, wait until it reports reaching the point, and
``kill -9`` it. ``anywhere`` kills after a random delay instead, wherever the
worker is. Then restart: the client executes again any operation whose token
was never consumed, and, once the dead workers' leases have lapsed,
``reconcilers`` real ``signoff reconcile --once`` processes start at the same
time. Last, each execution record is compared with the provider's ledger and
the order's refunded total.
"""

from __future__ import annotations

import random
import statistics
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
from signoff.chaos._figures import ChaosReport, PointFigures, figures_line
from signoff.chaos._processes import (
    ANYWHERE,
    STAGES,
    Setup,
    WorkerEnd,
    kill_anywhere,
    kill_at_point,
    reconcile_round,
)
from signoff.chaos._world import AGENT, AMOUNT_MINOR, FIRST_ORDER, TENANT, ChaosWorld, open_world
from signoff.exceptions import SignoffError
from signoff.gate._hooks import HookPoint
from signoff.testing._effects import Effect, check_exactly_once

POINTS = (*(p.value for p in HookPoint), ANYWHERE)
RECONCILE_ROUNDS = 3
CALIBRATION_RUNS = 3
TRIES_PER_KILL = 10


@dataclass(frozen=True, slots=True)
class _Run:
    proposal: Proposal
    token: str
    end: WorkerEnd


class _Orders:
    """Fresh order numbers, one per confirmed operation, across threads."""

    def __init__(self, first: int) -> None:
        self._next = first
        self._lock = threading.Lock()

    def take(self) -> int:
        with self._lock:
            self._next += 1
            return self._next


def run_chaos(
    db: str | None = None,
    *,
    kills: int = 50,
    points: Sequence[str] = POINTS,
    reconcilers: int = 2,
    parallel: int = 2,
    lease: float = 0.5,
    seed: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> ChaosReport:
    """Run the chaos experiment on a fresh database (SQLite file or PostgreSQL schema)."""
    if kills < 1 or reconcilers < 1 or parallel < 1 or lease <= 0:
        raise ValueError("kills, reconcilers and parallel must be ≥ 1; lease > 0")
    unknown = [p for p in points if p not in POINTS]
    if unknown:
        raise ValueError(f"unknown points {unknown}; choose from {list(POINTS)}")
    say = progress or (lambda line: None)
    rng = random.Random(seed)
    with _fresh_databases(db) as (fresh_db, shop):
        setup = Setup(fresh_db, shop, lease)
        world = open_world(setup.db, setup.shop, lease=timedelta(seconds=lease))
        orders = _Orders(FIRST_ORDER)
        try:
            figures = []
            for point in points:
                started = time.monotonic()
                if point == ANYWHERE:
                    runs = _kill_anywhere(world, setup, orders, kills, parallel, rng)
                else:
                    runs = _kill_at(world, setup, orders, HookPoint(point), kills, parallel)
                figures.append(_settle(world, setup, point, runs, reconcilers, started))
                say(figures_line(figures[-1]))
            audit_ok = world.gate.verify_audit().ok
        finally:
            world.close()
    kind = "postgresql" if _is_postgres(fresh_db) else "sqlite"
    return ChaosReport(kind, tuple(figures), audit_ok)


def _kill_at(
    world: ChaosWorld,
    setup: Setup,
    orders: _Orders,
    point: HookPoint,
    kills: int,
    parallel: int,
) -> list[_Run]:
    def one(_: int) -> _Run:
        proposal, token = world.confirmed_refund(orders.take())
        end = kill_at_point(setup, point.value, proposal.proposal_id, token)
        return _Run(proposal, token, end)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, range(kills)))


def _kill_anywhere(
    world: ChaosWorld,
    setup: Setup,
    orders: _Orders,
    kills: int,
    parallel: int,
    rng: random.Random,
) -> list[_Run]:
    """Kill at a uniformly random moment of an execute call (its length measured first)."""
    runs: list[_Run] = []
    for _ in range(CALIBRATION_RUNS):
        proposal, token = world.confirmed_refund(orders.take())
        runs.append(_Run(proposal, token, kill_anywhere(setup, proposal.proposal_id, token, None)))
    bound = 1.2 * statistics.median(r.end.seconds for r in runs)
    lock = threading.Lock()

    def one(_: int) -> None:
        for _try in range(TRIES_PER_KILL):
            proposal, token = world.confirmed_refund(orders.take())
            with lock:
                delay = rng.uniform(0, bound)
            end = kill_anywhere(setup, proposal.proposal_id, token, delay)
            with lock:
                runs.append(_Run(proposal, token, end))
            if end.killed:
                return

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        list(pool.map(one, range(kills)))
    return runs


def _settle(
    world: ChaosWorld,
    setup: Setup,
    point: str,
    runs: Sequence[_Run],
    reconcilers: int,
    started: float,
) -> PointFigures:
    for detail in {r.end.said + " " + r.end.detail for r in runs if r.end.detail}:
        sys.stderr.write(f"chaos: a worker at {point} ended on its own: {detail}\n")
    _execute_unconsumed(world, runs)
    proposals = [r.proposal for r in runs]
    time.sleep(setup.lease + 0.2)  # the dead workers' leases lapse
    handled: Counter[str] = Counter()
    for _ in range(RECONCILE_ROUNDS):
        handled.update(reconcile_round(setup, reconcilers))
        if not any(not e.status.is_terminal for e in _executions(world, proposals)):
            break
        time.sleep(setup.lease)
    return _compare(world, point, runs, handled, time.monotonic() - started)


def _execute_unconsumed(world: ChaosWorld, runs: Sequence[_Run]) -> None:
    """The restarted client: a token the dead worker never consumed is presented again."""
    with world.store.read() as tx:
        pending = [r for r in runs if tx.execution_for_proposal(r.proposal.proposal_id) is None]
    for run in pending:
        try:
            world.gate.execute(AGENT, run.proposal.proposal_id, run.token)
        except SignoffError as exc:
            sys.stderr.write(f"chaos: re-executing {run.proposal.proposal_id}: {exc.code}\n")


def _executions(world: ChaosWorld, proposals: Sequence[Proposal]) -> list[Execution]:
    with world.store.read() as tx:
        found = [tx.execution_for_proposal(p.proposal_id) for p in proposals]
    return [e for e in found if e is not None]


def _compare(
    world: ChaosWorld,
    point: str,
    runs: Sequence[_Run],
    handled: Counter[str],
    seconds: float,
) -> PointFigures:
    proposals = [r.proposal for r in runs]
    orders = {p.arguments["order_id"] for p in proposals}
    entries = [e for e in world.provider.ledger(TENANT) if e.order_id in orders]
    executions = _executions(world, proposals)
    verdict = check_exactly_once(executions, [Effect(e.request_key, e.reference) for e in entries])
    per_order = Counter(e.order_id for e in entries)
    refunded = {o: _refunded(world, o) for o in orders}
    over = sum(1 for o in orders if refunded[o] > per_order[o] * AMOUNT_MINOR)
    short = sum(1 for o in orders if refunded[o] < per_order[o] * AMOUNT_MINOR)
    return PointFigures(
        point=point,
        kills=sum(1 for r in runs if r.end.killed),
        runs=len(runs),
        effects=len(entries),
        duplicates=len(verdict.duplicates) + len(verdict.orphans) + over,
        lost=len(verdict.lost) + len(verdict.failed) + len(proposals) - len(executions),
        mismatched=len(verdict.unrecorded) + short,
        open=len(verdict.open),
        reconciled=len(handled),
        double_handled=sum(1 for n in handled.values() if n > 1),
        missed=sum(1 for r in runs if r.end.detail),
        seconds=seconds,
        landed=_landed(runs) if point == ANYWHERE else (),
    )


def _landed(runs: Sequence[_Run]) -> tuple[tuple[str, int], ...]:
    counts = Counter(r.end.said for r in runs if r.end.killed)
    return tuple((stage, counts[stage]) for stage in STAGES if counts[stage])


def _refunded(world: ChaosWorld, order_id: str) -> int:
    order = world.shop.order(TENANT, order_id)
    assert order is not None
    return order.refunded


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
