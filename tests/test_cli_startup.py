"""Each subcommand loads only what it uses: no web stack, MCP SDK or Authlib for the cheap ones.

`signoff dev-token` used to import FastAPI, the MCP SDK and the whole app (~2 s of CPU, 9–15 s
on a loaded machine) because `signoff.http` and `signoff.identity` imported every module on
first touch. Measured with `python -X importtime -m signoff dev-token --demo --sub a --tenant
t` (docs/PERFORMANCE.md); this test pins what is imported, never how long it takes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = (
    "fastapi",
    "starlette",
    "mcp",
    "authlib",
    "uvicorn",
    "psycopg",
    "webauthn",
    "jinja2",
    "opentelemetry",
)
PROBE = """
import json, sys
from signoff.cli._main import cli
try:
    cli.main(sys.argv[1:], "signoff")
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "heavy": [m for m in HEAVY if m in sys.modules]}))
"""
CHEAP = [
    ["--help"],
    ["dev-token", "--demo", "--sub", "alice", "--tenant", "acme", "--role", "refund_approver"],
    ["keys", "generate", "--out", "{dir}/keys.json"],
    ["db", "upgrade", "--db", "{dir}/signoff.db"],
    ["roles", "list", "--db", "{dir}/signoff.db", "--tenant", "acme"],
    ["audit", "verify", "--db", "{dir}/signoff.db"],
    ["tools", "--demo", "--format", "openai"],
    ["serve", "--help"],
    ["reconcile", "--help"],
    ["notify", "--help"],
    ["bench", "--help"],
    ["demo", "--help"],
    ["mcp", "--help"],
    ["token", "--help"],
]


@pytest.mark.parametrize("args", CHEAP, ids=lambda a: " ".join(a[:2]))
def test_a_cheap_subcommand_imports_no_web_stack(args: list[str], tmp_path: Path) -> None:
    """It runs (exit 0) and none of FastAPI, Starlette, MCP, Authlib, uvicorn, psycopg… loads."""
    argv = [a.format(dir=tmp_path) for a in args]
    if argv[:2] in (["roles", "list"], ["audit", "verify"]):
        subprocess.run(
            [sys.executable, "-m", "signoff", "db", "upgrade", "--db", argv[3]], check=True
        )
    probe = f"HEAVY = {HEAVY!r}\n{PROBE}"
    done = subprocess.run(
        [sys.executable, "-c", probe, *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "SIGNOFF_DATA_DIR": str(tmp_path / "data")},
        timeout=120,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] in (0, None), done.stderr
    assert result["heavy"] == [], f"{' '.join(args)} imported {result['heavy']}"
