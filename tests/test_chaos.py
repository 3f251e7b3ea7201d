"""kill -9 of real worker processes at each named point (a small count, so CI stays fast)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff import ExecutionStatus, HookPoint
from signoff.chaos import run_chaos
from signoff.chaos._world import AGENT, open_world
from signoff.cli._main import cli
from tests.faultworld import STORES
from tests.pg import POSTGRES_URL, require_postgres

KILLS = 2


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
def test_chaos_run_is_exactly_once_at_every_point(kind: str, tmp_path: Path) -> None:
    """KILLS SIGKILLs per point, two racing reconcilers: no duplicate, none lost, none open."""
    if kind == "postgresql":
        require_postgres()
    db = POSTGRES_URL if kind == "postgresql" else str(tmp_path / "chaos.db")
    report = run_chaos(db, kills=KILLS, reconcilers=2, parallel=2, lease=0.3, seed=7)
    assert report.store == kind
    assert [p.point for p in report.points] == [*(p.value for p in HookPoint), "anywhere"]
    for figures in report.points:
        assert figures.kills == KILLS and figures.missed == 0, figures
        assert figures.effects == figures.runs, figures
        assert (figures.duplicates, figures.lost, figures.mismatched, figures.open) == (0, 0, 0, 0)
        assert figures.double_handled == 0, figures
    # Every kill at a point before the record left work for the reconcilers; after it, none.
    assert [p.reconciled for p in report.points[:4]] == [KILLS, KILLS, KILLS, 0]
    assert sum(n for _, n in report.points[4].landed) == KILLS
    assert report.audit_ok and report.ok


def test_chaos_command_prints_the_figures(tmp_path: Path) -> None:
    """`signoff chaos` prints a row per point and the totals line, and exits 0 when clean."""
    db = str(tmp_path / "cli.db")
    args = ["chaos", "--db", db, "--kills", "1", "--point", "after_provider_success"]
    result = CliRunner().invoke(cli, [*args, "--lease", "0.2"])
    assert result.exit_code == 0, result.output
    assert "after_provider_success" in result.output
    assert "total: 1 kills, 0 duplicates, 0 lost, 0 non-terminal" in result.output


def test_chaos_refuses_an_existing_database(tmp_path: Path) -> None:
    """The run needs a fresh database; it never writes into an existing one."""
    db = tmp_path / "used.db"
    db.write_text("")
    result = CliRunner().invoke(cli, ["chaos", "--db", str(db), "--kills", "1"])
    assert result.exit_code == 2 and "fresh database" in result.output


def test_kill_at_kills_the_worker_process_for_real(tmp_path: Path) -> None:
    """testing.kill_at in a subprocess: the process dies by SIGKILL right after the call."""
    db, shop = str(tmp_path / "k.db"), str(tmp_path / "k.shop")
    world = open_world(db, shop, lease=timedelta(milliseconds=1))
    proposal, token = world.confirmed_refund(700_001)
    script = textwrap.dedent(
        f"""
        from datetime import timedelta
        from signoff.chaos._world import AGENT, open_world
        from signoff.testing import HookPoint, kill_at
        world = open_world({db!r}, {shop!r}, lease=timedelta(milliseconds=1),
                           hooks=kill_at(HookPoint.AFTER_PROVIDER_SUCCESS), migrate=False)
        world.gate.execute(AGENT, {proposal.proposal_id!r}, {token!r})
        print("survived")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == -signal.SIGKILL and "survived" not in done.stdout
    with world.store.read() as tx:
        execution = tx.execution_for_proposal(proposal.proposal_id)
    assert execution is not None and execution.status is ExecutionStatus.RUNNING
    assert [r.action.value for r in world.gate.reconcile()] == ["settled"]
    [entry] = world.provider.ledger()
    settled = world.gate.execution(AGENT, execution.execution_id)
    assert settled.provider_reference == entry.reference
    world.close()
