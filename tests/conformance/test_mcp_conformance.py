"""The newest MCP conformance suite against `signoff serve --demo`, every scenario counted.

`@modelcontextprotocol/conformance` (pinned with the Node 22 it needs, the npm registry's
`node` package, in tests/conformance/package.json) runs all of its server scenarios in one
process against /mcp. The token comes the way an MCP client gets one: the demo's own
authorization server (registration, authorization code with PKCE, the sign-in page), and
a pass-through adds it to the suite's requests (tests/conformance/proxy.py).

Each check is read from the suite's results: a success is a pass; a failure is *not
applicable* only when it says why in the suite's own words — it called one of the
suite's fixture tools (`test_simple_text`, `slow_compute`, …), which no signoff catalog
has, it could not be tested, or it asked for prompts, resources, logging or completions,
which signoff does not serve — and the extensions signoff does not declare (tasks,
skills) are not applicable as a whole. A scenario with no real success is counted as not
applicable, never as a pass; any other failure fails the test. The authorization-server
scenarios run against the demo's authorization server, the person's sign-in included.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.demo_oauth import browse_sign_in, demo_token, register
from tests.serving import free_port, serving

HERE = Path(__file__).parent
NODE = HERE / "node_modules" / ".bin" / "node"
SUITE = HERE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
GENERIC = {"wire-schema-valid"}
"""Checks every scenario adds whatever it tests: they make no scenario a pass."""
PASSING = {
    "server-initialize",
    "server-session-lifecycle",
    "server-stateless",
    "ping",
    "tools-list",
    "server-sse-polling",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "caching",
    "http-header-validation",
    "input-required-result-unsupported-methods",
    "input-required-result-validate-input",
}
"""The scenarios with real checks for signoff; docs/AGENTS.md lists why the others do not."""
NOT_DECLARED = ("tasks-", "sep-2640-skills-", "resources-", "prompts-", "sep-2164-resource")
"""Extensions signoff does not declare (tasks, skills), and resources and prompts it has not."""
NOT_APPLICABLE = (
    re.compile(r"Unknown tool: (?P<tool>\w+)"),  # one of the suite's fixture tools
    re.compile(r"Tool '(?P<tool>\w+)' not found"),
    re.compile(r"^Not testable"),
    re.compile(r"^Prerequisite failed: could not get initial InputRequiredResult"),
    re.compile(r"(prompts|resources)(/[a-z]+)+ returned JSON-RPC error -32601"),
)
UNSERVED_METHOD_SCENARIOS = (
    "logging-set-level",
    "completion-complete",
    "tools-call-with-logging",
    "input-required-result-non-tool-request",
    "input-required-result-multi-round",
)
"""Their checks call logging/setLevel, completion/complete or prompts/get, which signoff
does not serve (-32601), or a multi-round fixture tool of the suite."""


def node() -> Path:
    if not NODE.is_file() or not SUITE.is_file():
        message = f"the conformance suite needs `npm ci --prefix {HERE}` (it brings Node 22)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return NODE


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    node()
    db = tmp_path_factory.mktemp("conformance") / "signoff.db"
    with serving(["--demo", "--db", str(db)]) as base:
        yield base


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


def results(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """{scenario: its checks} from the suite's output folder."""
    found = {}
    for checks in folder.glob("*/checks.json"):
        name = re.sub(
            r"^(server|authorization-server)-|-\d{4}-\d\d-\d\dT.*$", "", checks.parent.name
        )
        found[name] = json.loads(checks.read_text())
    return found


def verdict(name: str, checks: list[dict[str, Any]], own_tools: set[str]) -> tuple[str, list[str]]:
    """("pass" | "not applicable" | "fail", the failures that are real)."""
    if name.startswith(NOT_DECLARED):
        return "not applicable", []
    real = []
    for check in checks:
        if check["status"] not in ("FAILURE", "ERROR"):
            continue
        message = check.get("errorMessage") or ""
        match = next((p.search(message) for p in NOT_APPLICABLE if p.search(message)), None)
        if match is not None and match.groupdict().get("tool") not in own_tools:
            continue
        if name in UNSERVED_METHOD_SCENARIOS:
            continue
        real.append(f"{check['id']}: {message[:200]}")
    succeeded = [c for c in checks if c["status"] == "SUCCESS" and c["id"] not in GENERIC]
    if real:
        return "fail", real
    return ("pass" if succeeded else "not applicable"), []


@pytest.mark.slow
def test_every_scenario_of_the_newest_suite_passes_or_is_not_applicable(
    served: str, tmp_path: Path
) -> None:
    """All server scenarios (`--suite all`): the applicable ones pass with real checks, the
    rest are counted as not applicable for a stated reason; nothing else fails."""
    token_file = tmp_path / "token"
    token_file.write_text(demo_token(served))
    own_tools = {t["name"] for t in _tools(served, token_file.read_text())}
    listed = subprocess.run(
        [node(), SUITE, "list", "--server"], capture_output=True, text=True, check=True
    ).stdout
    scenarios = {line.split()[1] for line in listed.splitlines() if line.strip().startswith("- ")}
    with proxying(served, token_file) as proxy:
        subprocess.run(
            [node(), SUITE, "server", "--url", f"{proxy}/mcp", "--suite", "all", "-o", "out"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
    found = results(tmp_path / "out")
    assert set(found) == scenarios, f"not run: {sorted(scenarios - set(found))}"
    verdicts = {name: verdict(name, checks, own_tools) for name, checks in found.items()}
    failed = {name: why for name, (kind, why) in verdicts.items() if kind == "fail"}
    assert not failed, "\n".join(f"{name}: {why}" for name, why in failed.items())
    passed = {name for name, (kind, _) in verdicts.items() if kind == "pass"}
    assert passed == PASSING, f"passed {sorted(passed)}"
    print(f"conformance: {len(passed)} passed, {len(found) - len(passed)} not applicable")


@pytest.mark.slow
def test_the_demo_authorization_server_passes_the_suites_scenarios(
    served: str, tmp_path: Path
) -> None:
    """RFC 8414 metadata and the authorization code grant with PKCE and a resource
    indicator, the person's sign-in done by the test's browser; both pass."""
    port = free_port()
    callback = f"http://127.0.0.1:{port}/callback"
    client_id = register(served, callback=callback, name="conformance")
    command: list[str | Path] = [
        node(), SUITE, "authorization", "--url", served, "--client-id", client_id,
        "--resource", f"{served}/mcp", "--port", str(port), "-o", "out",
    ]  # fmt: skip
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp_path
    ) as suite:
        assert suite.stdout is not None
        for line in suite.stdout:
            if line.startswith(served) and "/authorize?" in line:
                back = browse_sign_in(line.strip(), "u_42", callback=callback)
                assert httpx.get(str(back), timeout=10).status_code == 200  # the suite's callback
        assert suite.wait(timeout=120) == 0
    found = results(tmp_path / "out")
    assert set(found) == {"authorization-server-metadata-endpoint", "authorization-code-grant"}
    for name, checks in found.items():
        assert [c["id"] for c in checks if c["status"] == "FAILURE"] == [], name
        assert any(c["status"] == "SUCCESS" for c in checks), name


def _tools(base: str, token: str) -> list[dict[str, Any]]:
    """The tool list as the token's agent sees it (to tell our tools from the suite's)."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
        started = http.post("/mcp", json=init)
        session = {"Mcp-Session-Id": started.headers["mcp-session-id"]}
        http.post(
            "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
        )
        listed = http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=session
        )
    data = next(
        line[5:]
        for line in listed.text.splitlines()
        if line.startswith("data:") and line[5:].strip()
    )
    tools: list[dict[str, Any]] = json.loads(data)["result"]["tools"]
    return tools
