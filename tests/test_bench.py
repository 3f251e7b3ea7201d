"""`signoff bench` runs real flows on either store, checks them, and ends with the ratio."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff.bench import run_bench
from signoff.bench._stats import percentile
from signoff.cli._main import cli
from tests.pg import POSTGRES_URL, require_postgres


def test_bench_on_sqlite_prints_phases_and_ends_with_the_ratio(tmp_path: Path) -> None:
    """A small run: every flow refunded once, the chain intact, the ratio on the last line."""
    db = str(tmp_path / "bench.db")
    result = CliRunner().invoke(cli, ["bench", "--db", db, "--flows", "6", "--workers", "2"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[-1].startswith("ratio flows/s ÷ (bare commits/s ÷ commits per flow): ")
    float(lines[-1].rsplit(" ", 1)[1])
    for phase in ("propose", "approve", "execute", "flow", "bare"):
        assert any(line.startswith(phase) for line in lines), phase
    assert "ledger: 6 refunds for 6 flows" in lines
    assert "commits per flow: 5.00 (signoff 4.00 + provider 1.00)" in result.stdout
    trips = next(line for line in lines if line.startswith("round trips per flow: "))
    signoff_trips = float(trips.split("(signoff ")[1].split(" ")[0])
    assert signoff_trips >= 4 * 2  # counted: at least BEGIN and COMMIT of each commit
    again = CliRunner().invoke(cli, ["bench", "--db", db, "--flows", "6", "--workers", "2"])
    assert again.exit_code == 2
    assert again.stderr.startswith(
        f"error [configuration_error]: signoff bench starts from fresh files, and {db} "
    ), again.stderr  # not `error [internal]: … bare write changed 0 rows` half-way through
    assert "Traceback" not in again.stderr and again.stdout == ""


@pytest.mark.postgres
def test_bench_on_postgresql_uses_a_schema_of_its_own_and_drops_it() -> None:
    """The PostgreSQL run measures in a fresh schema and leaves nothing behind."""
    require_postgres()
    import psycopg

    report = run_bench(POSTGRES_URL, flows=4, workers=2, tenants=2)
    assert report.flows == 4 and report.commits_per_flow == 5.0
    assert report.ratio > 0
    # Counted on the wire: at least one round trip per signoff commit, and the provider's.
    assert report.counts.signoff_trips >= 4 * 4 and report.counts.shop_trips >= 4
    # 6 events per flow, and one role.granted per tenant (the approver, in the role directory).
    assert "audit chain intact: 26 events" in report.checks
    schema = report.target.split("schema=")[1].rstrip(")")
    with psycopg.connect(POSTGRES_URL) as conn:
        left = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert left.fetchone() is None


def test_bench_refuses_fewer_flows_than_workers() -> None:
    """Every worker needs at least one flow: a typed usage error, not a crash."""
    result = CliRunner().invoke(cli, ["bench", "--flows", "1", "--workers", "2"])
    assert result.exit_code == 2
    assert "at least one flow" in result.output


def test_percentile_is_nearest_rank() -> None:
    """p50 of 1..10 is 5, p99 is 10, p100 is the maximum."""
    values = [float(v) for v in range(1, 11)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (5, 10, 10)
