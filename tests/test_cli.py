"""The command line a new user runs first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from signoff.cli._main import cli
from signoff.store._migrations import SCHEMA_VERSION


def test_demo_passes_and_prints_the_ledger(tmp_path: Path) -> None:
    """`signoff demo` walks the seed scenario, refuses each attack and exits 0."""
    result = CliRunner().invoke(cli, ["demo", "--db", str(tmp_path / "demo.db")])
    assert result.exit_code == 0, result.output
    for code in ("already_consumed", "args_mismatch", "expired", "not_found", "state_changed"):
        assert code in result.output
    assert "demo passed" in result.output
    assert "ord_1001" in result.output


def test_python_dash_m_and_version() -> None:
    """`python -m signoff --version` works like the console script."""
    out = subprocess.run(
        [sys.executable, "-m", "signoff", "--version"], capture_output=True, text=True, check=True
    )
    assert "signoff" in out.stdout


def test_db_upgrade_is_idempotent_and_refuses_newer_schema(tmp_path: Path) -> None:
    """Running the migration twice is harmless; a newer schema is refused."""
    import sqlite3

    db = str(tmp_path / "s.db")
    runner = CliRunner()
    first = runner.invoke(cli, ["db", "upgrade", "--db", db])
    assert first.exit_code == 0 and f"0 -> {SCHEMA_VERSION}" in first.output
    second = runner.invoke(cli, ["db", "upgrade", "--db", db])
    assert second.exit_code == 0 and f"{SCHEMA_VERSION} -> {SCHEMA_VERSION}" in second.output
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE signoff_meta SET value = '99' WHERE key = 'schema_version'")
    newer = subprocess.run(
        [sys.executable, "-m", "signoff", "db", "upgrade", "--db", db],
        capture_output=True,
        text=True,
        check=False,
    )
    assert newer.returncode == 2
    assert "schema_too_new" in newer.stderr


def test_audit_verify_refuses_a_missing_or_foreign_database(tmp_path: Path) -> None:
    """No file, or a file without the schema: a clear error, and nothing is created."""
    import sqlite3

    missing = tmp_path / "missing.db"
    result = CliRunner().invoke(cli, ["audit", "verify", "--db", str(missing)])
    assert result.exit_code != 0
    assert not missing.exists()
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE unrelated (a)")
    run = subprocess.run(
        [sys.executable, "-m", "signoff", "audit", "verify", "--db", str(foreign)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 2
    assert "signoff db upgrade" in run.stderr


def test_commands_load_lazily() -> None:
    """Every command is listed; a command like `db` runs without importing the web stack."""
    code = (
        "import sys; from signoff.cli._main import cli; "
        "from click.testing import CliRunner; CliRunner().invoke(cli, ['db', '--help']); "
        "print('fastapi' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    result = CliRunner().invoke(cli, ["--help"])
    for name in ("bench", "chaos", "dev-token", "mcp", "reconcile", "serve", "tools", "demo"):
        assert name in result.output
