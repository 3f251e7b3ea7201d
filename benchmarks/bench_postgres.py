"""PostgreSQL's targets in one run: `pgbench -N` with 8 clients beside `signoff bench`, 8 workers.

    .venv/bin/python benchmarks/bench_postgres.py [--db postgresql://postgres@127.0.0.1:5432/test]
        [--flows 2000] [--workers 8] [--clients 8] [--seconds 15] [--repeat 3]

pgbench runs in a scratch database of its own on the same server (created,
filled with `pgbench -i`, dropped at the end), before and after the flows;
the two runs are pooled. Each repeat prints both figures and the targets of
issue 13: flows/s ≥ 0.5 × (pgbench tps ÷ 4) — a flow needs four durable
commits, pgbench's transaction one — and ≤ 8 signoff round trips per flow.
The machine's load average is printed with every line: on a shared machine
it is part of the figure.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import statistics
import subprocess
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

from signoff.bench import BenchReport, run_bench
from signoff.store._postgres import split_schema

DEFAULT_URL = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
TPS = re.compile(r"tps = ([0-9.]+) \(without initial connection time\)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default=DEFAULT_URL)
    parser.add_argument("--flows", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--clients", type=int, default=8, help="pgbench clients")
    parser.add_argument("--seconds", type=int, default=15, help="each pgbench run")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    scratch = "signoff_pgbench_" + secrets.token_hex(4)
    _create_database(options.db, scratch)
    ratios, trips = [], []
    try:
        _pgbench(options.db, scratch, ["-i", "-q", "-s", "1"])
        for n in range(1, options.repeat + 1):
            before = _tps(options.db, scratch, options.clients, options.seconds)
            report = run_bench(options.db, flows=options.flows, workers=options.workers)
            after = _tps(options.db, scratch, options.clients, options.seconds)
            tps = statistics.fmean([before, after])
            ratio = report.flows_per_second / (tps / 4)
            per_flow = report.counts.signoff_trips / report.flows
            ratios.append(ratio)
            trips.append(per_flow)
            print(_line(n, tps, before, after, report, ratio, per_flow), flush=True)
    finally:
        _drop_database(options.db, scratch)
    print(
        f"median: flows/s ÷ (pgbench tps ÷ 4) = {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}–{max(ratios):.3f}; target ≥ 0.5: "
        f"{'met' if statistics.median(ratios) >= 0.5 else 'not met'}); "
        f"signoff round trips per flow {statistics.median(trips):.2f} (target ≤ 8: "
        f"{'met' if statistics.median(trips) <= 8 else 'not met'})"
    )


def _line(
    n: int,
    tps: float,
    before: float,
    after: float,
    report: BenchReport,
    ratio: float,
    per_flow: float,
) -> str:
    load = os.getloadavg()[0]
    shop = report.counts.shop_trips / report.flows
    return (
        f"run {n}: pgbench -N {tps:.0f} tps ({before:.0f} before, {after:.0f} after); "
        f"signoff {report.flows_per_second:.1f} flows/s with {report.workers} workers; "
        f"flows/s ÷ (tps ÷ 4) = {ratio:.3f}; round trips per flow: signoff {per_flow:.2f} "
        f"+ provider {shop:.2f}; load average {load:.2f}"
    )


def _tps(url: str, database: str, clients: int, seconds: int) -> float:
    jobs = min(clients, os.cpu_count() or 1)
    out = _pgbench(url, database, ["-N", "-c", str(clients), "-j", str(jobs), "-T", str(seconds)])
    found = TPS.search(out)
    if found is None:
        raise SystemExit(f"pgbench printed no tps:\n{out}")
    return float(found.group(1))


def _pgbench(url: str, database: str, arguments: list[str]) -> str:
    parts = urlsplit(url)
    command = ["pgbench", "-h", parts.hostname or "localhost", "-p", str(parts.port or 5432)]
    if parts.username:
        command += ["-U", parts.username]
    env = dict(os.environ)
    if parts.password:
        env["PGPASSWORD"] = parts.password
    done = subprocess.run(
        [*command, *arguments, database], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"pgbench failed: {done.stderr.strip()}")
    return done.stdout + done.stderr


def _create_database(url: str, name: str) -> None:
    with psycopg.connect(split_schema(url)[0], autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def _drop_database(url: str, name: str) -> None:
    with psycopg.connect(split_schema(url)[0], autocommit=True) as conn:
        drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
        conn.execute(drop.format(sql.Identifier(name)))


if __name__ == "__main__":
    main()
