"""Every CLI failure is one line `error [code]: what happened — what to do`, exit 2, no traceback.

A table of bad inputs walks through every command; a few cases run the real console
script in a subprocess (a missing extra, --debug, a busy port).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff.cli._main import cli
from tests.pg import POSTGRES_URL

LINE = re.compile(r"^error \[(?P<code>[a-z_]+)\]: (?P<what>.+) — (?P<todo>.+)$")
DOWN = "postgresql://postgres@127.0.0.1:1/test"
BAD_IPV6 = "postgresql://[::1"
BAD_SCHEMA = "postgresql://postgres@127.0.0.1:5432/test?schema=Bad-Name"
SIGNOFF = [sys.executable, "-m", "signoff"]
KEY = "ab" * 32
PRODUCTION = {
    "SIGNOFF_TOKEN_KEY": KEY,
    "SIGNOFF_JWT_ISSUER": "https://idp.example",
    "SIGNOFF_JWT_HS256_SECRET": KEY,
}
TOOLS_MODULE = """
from signoff import Catalog

def needs_arguments(shop):
    return Catalog()

def not_a_catalog():
    return 42

def broken():
    raise RuntimeError("the shop API is down")

def good():
    return Catalog()

NOT_CALLABLE = "catalog"
"""


def one_error_line(stderr: str) -> re.Match[str]:
    """The whole of stderr is one error line with a code, a cause and a next step."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    match = LINE.match(lines[0])
    assert match is not None, lines[0]
    return match


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with a tools module, and its own data directory."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SIGNOFF_DATA_DIR", str(tmp_path / "data"))
    for name in (*PRODUCTION, "SIGNOFF_CATALOG", "SIGNOFF_DATABASE_URL", "SIGNOFF_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "errtools.py").write_text(TOOLS_MODULE)
    (tmp_path / "syntaxtools.py").write_text("def catalog(:\n    pass\n")
    (tmp_path / "deptools.py").write_text("import no_such_dependency_here\n")
    (tmp_path / "raisingtools.py").write_text("raise RuntimeError('the shop API is down')\n")
    return tmp_path


@pytest.fixture
def read_only_db(place: Path) -> Iterator[str]:
    """A migrated SQLite file this process cannot write (immutable when running as root)."""
    path = place / "ro.db"
    assert CliRunner().invoke(cli, ["db", "upgrade", "--db", str(path)]).exit_code == 0
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield str(path)
        return
    if subprocess.run(["chattr", "+i", str(path)], check=False).returncode != 0:
        pytest.skip("root cannot be denied a write here without chattr +i")
    try:
        yield str(path)
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


READ_ONLY = [
    ("demo", "--db", "{ro}"),
    ("serve", "--demo", "--db", "{ro}", "--port", "0"),
    ("reconcile", "--demo", "--db", "{ro}", "--once"),
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_a_read_only_database_is_one_line(read_only_db: str, args: tuple[str, ...]) -> None:
    """Commands that write refuse a read-only file before doing anything, never report ready."""
    result = CliRunner().invoke(cli, [a.format(ro=read_only_db) for a in args])
    assert result.exit_code == 2
    assert one_error_line(result.stderr)["code"] == "store_unavailable"
    assert "signoff demo on" not in result.output


BAD_INPUTS: list[tuple[tuple[str, ...], dict[str, str], str]] = [
    # malformed and unreachable PostgreSQL, in every command that opens a store
    (("db", "upgrade", "--db", BAD_IPV6), {}, "invalid_database_url"),
    (("audit", "verify", "--db", BAD_IPV6), {}, "invalid_database_url"),
    (("serve", "--demo", "--db", BAD_SCHEMA, "--port", "0"), {}, "invalid_database_url"),
    (("mcp", "--demo", "--db", BAD_IPV6), {}, "invalid_database_url"),
    (("reconcile", "--demo", "--db", BAD_SCHEMA, "--once"), {}, "invalid_database_url"),
    (("chaos", "--db", BAD_IPV6, "--kills", "1"), {}, "invalid_database_url"),
    (("bench", "--db", BAD_IPV6, "--flows", "2", "--workers", "1"), {}, "invalid_database_url"),
    (("demo", "--db", "postgresql://postgres@127.0.0.1/test"), {}, "invalid_database_url"),
    (("db", "upgrade", "--db", DOWN), {}, "store_unavailable"),
    (("audit", "verify", "--db", DOWN), {}, "store_unavailable"),
    (("serve", "--demo", "--db", DOWN, "--port", "0"), {}, "store_unavailable"),
    (("reconcile", "--demo", "--db", DOWN, "--once"), {}, "store_unavailable"),
    (("chaos", "--db", DOWN, "--kills", "1"), {}, "store_unavailable"),
    (("bench", "--db", DOWN, "--flows", "2", "--workers", "1"), {}, "store_unavailable"),
    (("audit", "verify", "--db", "missing.db"), {}, "store_error"),
    # an empty --db (an unset shell variable) never falls back to the default store
    (("demo", "--db", ""), {}, "usage"),
    (("db", "upgrade", "--db", " "), {}, "usage"),
    (("serve", "--demo", "--db", "", "--port", "0"), {}, "usage"),
    (("bench", "--db", "", "--flows", "2", "--workers", "1"), {}, "usage"),
    (("roles", "list", "--db", "", "--tenant", "acme"), {}, "usage"),
    (("reconcile", "--demo", "--db", "", "--once"), {}, "usage"),
    # catalogs: wrong signature, a class, a non-callable, a failing factory, a missing module
    (("tools", "--catalog", "errtools:needs_arguments"), {}, "invalid_reference"),
    (("tools", "--catalog", "errtools:not_a_catalog"), {}, "invalid_reference"),
    (("tools", "--catalog", "errtools:NOT_CALLABLE"), {}, "invalid_reference"),
    (("tools", "--catalog", "errtools:broken"), {}, "invalid_reference"),
    (("tools", "--catalog", "signoff:Catalog"), {}, "invalid_reference"),
    (("tools", "--catalog", "no_such_module:x"), {}, "invalid_reference"),
    (("tools", "--catalog", "errtools"), {}, "invalid_reference"),
    # the catalog's own module is broken: a syntax error, a missing dependency, a raise
    (("tools", "--catalog", "syntaxtools:catalog"), {}, "catalog_import"),
    (("tools", "--catalog", "deptools:catalog"), {}, "catalog_import"),
    (("tools", "--catalog", "raisingtools:catalog"), {}, "catalog_import"),
    (("reconcile", "--catalog", "syntaxtools:catalog", "--once"), {}, "catalog_import"),
    (
        ("serve", "--port", "0"),
        {**PRODUCTION, "SIGNOFF_CATALOG": "syntaxtools:catalog"},
        "catalog_import",
    ),
    (
        ("mcp", "--catalog", "signoff:Catalog", "--principal", "a@t"),
        PRODUCTION,
        "invalid_reference",
    ),
    (("reconcile", "--catalog", "errtools:needs_arguments", "--once"), {}, "invalid_reference"),
    (
        ("serve", "--port", "0"),
        {**PRODUCTION, "SIGNOFF_CATALOG": "signoff:Catalog"},
        "invalid_reference",
    ),
    # settings
    (("serve", "--port", "0"), {}, "invalid_settings"),
    (("serve", "--demo"), {"SIGNOFF_PORT": "eighty", "SIGNOFF_WORKERS": "0"}, "invalid_settings"),
    (("serve", "--demo", "--config", "nonexistent.toml"), {}, "invalid_settings"),
    (("serve", "--demo"), {"SIGNOFF_CONFIG": "nonexistent.toml"}, "invalid_settings"),
    (("dev-token", "--sub", "a", "--tenant", "t"), {}, "invalid_settings"),
    (("tools",), {}, "invalid_settings"),
    (("mcp", "--principal", "a@t"), {}, "invalid_settings"),
    # usage
    (("serve", "--port", "eighty"), {}, "usage"),
    (("tools", "--format", "yaml"), {}, "usage"),
    (("mcp", "--db", "x.db"), {}, "usage"),
    (("reconcile", "--once"), {}, "usage"),
    (("frobnicate",), {}, "usage"),
]


@pytest.mark.parametrize(
    ("args", "env", "code"), BAD_INPUTS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_bad_input_is_one_line(
    place: Path, args: tuple[str, ...], env: dict[str, str], code: str
) -> None:
    """Each bad input: exit 2, one line naming the code, the cause and what to do."""
    result = CliRunner().invoke(cli, list(args), env=env)
    assert result.exit_code == 2, result.output
    assert one_error_line(result.stderr)["code"] == code
    assert result.stdout == ""


def test_a_syntax_error_in_the_catalog_module_names_the_file_and_line(place: Path) -> None:
    """Not `error [internal]: … report it if it looks like a bug`: the user's file and line."""
    result = CliRunner().invoke(cli, ["tools", "--catalog", "syntaxtools:catalog"])
    line = one_error_line(result.stderr)
    assert line["code"] == "catalog_import"
    assert f"has a syntax error at {place / 'syntaxtools.py'}:1" in line["what"]
    assert line["todo"].startswith("fix the module")
    missing = CliRunner().invoke(cli, ["tools", "--catalog", "deptools:catalog"])
    assert "No module named 'no_such_dependency_here'" in missing.stderr


def test_every_missing_production_setting_in_one_line(place: Path) -> None:
    """`serve` without configuration names all four gaps in one run."""
    result = CliRunner().invoke(cli, ["serve"])
    what = one_error_line(result.stderr)["what"]
    for name in ("SIGNOFF_TOKEN_KEY", "SIGNOFF_JWT_ISSUER", "verification key", "SIGNOFF_CATALOG"):
        assert name in what


def test_a_catalog_module_in_the_current_directory_is_found(place: Path) -> None:
    """`--catalog mytools:factory` imports from where the command runs, without PYTHONPATH."""
    result = CliRunner().invoke(cli, ["tools", "--catalog", "errtools:good"])
    assert result.exit_code == 0, result.output
    names = [tool["function"]["name"] for tool in json.loads(result.stdout)]
    # the empty catalog: only the read tools
    assert names == ["get_proposal_status", "get_mandate_status"]


def test_postgresql_without_the_extra_names_the_extra(place: Path) -> None:
    """A PostgreSQL URL with psycopg missing: one line naming `signoff[postgres]`."""
    fake = place / "no_psycopg"
    (fake / "psycopg").mkdir(parents=True)
    (fake / "psycopg" / "__init__.py").write_text("raise ImportError('No module named psycopg')\n")
    env = {**os.environ, "PYTHONPATH": str(fake)}
    result = subprocess.run(
        [*SIGNOFF, "db", "upgrade", "--db", POSTGRES_URL],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    match = one_error_line(result.stderr)
    assert match["code"] == "missing_extra" and "signoff[postgres]" in match["todo"]


def test_debug_prints_the_traceback(place: Path) -> None:
    """--debug adds the traceback above the same one line."""
    result = subprocess.run(
        [*SIGNOFF, "--debug", "db", "upgrade", "--db", BAD_IPV6],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error [invalid_database_url]: ")


def test_a_busy_port_is_reported_before_any_banner(place: Path) -> None:
    """`serve --demo` on a port in use: one line, and no 'listening' banner printed first."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [*SIGNOFF, "serve", "--demo", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 2
    match = one_error_line(result.stderr)
    assert match["code"] == "configuration_error" and str(port) in match["what"]
    assert result.stdout == ""
