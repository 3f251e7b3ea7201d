"""The MCP conformance suite against `signoff serve --demo`, with a token a client obtains.

`signoff serve --demo` trusts a real OpenID provider (tests/identity/idp);
the token comes from a bare 401 through RFC 9728 metadata to the provider's
token endpoint, and `npx @modelcontextprotocol/conformance` (pinned in
tests/conformance/package.json) runs every server scenario that applies to a
server without resources or prompts. docs/AGENTS.md lists the others.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conformance.proxy import discover_token
from tests.identity.idp import Idp, SigningKey, free_port

HERE = Path(__file__).parent
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
CLIENT = "conformance-client"
# Every server scenario of the pinned suite that applies to signoff; docs/AGENTS.md says why
# each other one does not (no resources, prompts or logging capability; the suite's own tools).
APPLICABLE = (
    "server-initialize",
    "ping",
    "tools-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)


def node() -> str:
    path = shutil.which("node")
    if path is None or not SUITE.is_file():
        message = f"the conformance suite needs node and `npm ci --prefix {HERE}`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`signoff serve --demo` on a free port, trusting a provider that issues its tokens."""
    node()
    workdir = tmp_path_factory.mktemp("conformance")
    idp = Idp(workdir).start([SigningKey("c1")])
    port = free_port()
    issuers = [{"issuer": idp.issuer, "audience": "signoff", "claims": {"agent_clients": [CLIENT]}}]
    env = {**os.environ, "SIGNOFF_ISSUERS": json.dumps(issuers)}
    db = workdir / "signoff.db"
    server = subprocess.Popen(
        [sys.executable, "-m", "signoff", "serve", "--demo", "--port", str(port), "--db", str(db)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/healthz", server)
        yield f"{base}/mcp"
    finally:
        server.terminate()
        server.wait(timeout=20)
        idp.stop()


@contextmanager
def proxying(upstream: str, token_file: Path) -> Iterator[str]:
    """The token-adding pass-through (tests/conformance/proxy.py) in its own process."""
    port = free_port()
    proxy = subprocess.Popen(
        [sys.executable, "-m", "tests.conformance.proxy", upstream, str(token_file), str(port)],
        cwd=HERE.parent.parent,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(f"{base}/healthz", proxy)
        yield base
    finally:
        proxy.terminate()
        proxy.wait(timeout=20)


def _wait_for(url: str, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        assert process.poll() is None, f"the process serving {url} exited"
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        threading.Event().wait(0.05)
    raise AssertionError(f"nothing answered at {url}")


@pytest.mark.slow
def test_the_applicable_conformance_scenarios_pass(mcp_url: str, tmp_path: Path) -> None:
    """Each applicable server scenario passes with a token obtained by discovery."""
    token_file = tmp_path / "token"
    token_file.write_text(discover_token(mcp_url, CLIENT, f"{CLIENT}-secret"))
    upstream = mcp_url.removesuffix("/mcp")
    failed = {}
    with proxying(upstream, token_file) as proxy:
        for scenario in APPLICABLE:
            run = subprocess.run(
                [node(), str(SUITE), "server", "--url", f"{proxy}/mcp", "--scenario", scenario],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=tmp_path,
            )
            if run.returncode != 0:
                failed[scenario] = _failures(run.stdout + run.stderr)
    assert not failed, "\n".join(f"{name}: {lines}" for name, lines in failed.items())


def _failures(output: str) -> list[str]:
    """The suite's lines that report a failed check (or the tail, if it names none)."""
    lines = [line for line in output.splitlines() if "FAIL" in line or "✗" in line]
    return lines or output.splitlines()[-15:]
