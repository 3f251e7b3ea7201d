"""Real upstream MCP servers (npm, installed by `npm ci --prefix tests/gateway`) behind a gateway.

Each upstream runs behind ``proxy_upstream.py``, which logs every request the real
server receives (so a test counts its ``tools/call``s across restarts) and can kill
the server mid-call or change a tool's schema on demand.
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Gate, Principal, Proposal, SQLiteStore, Store
from signoff.gateway import Gateway, UpstreamSpec, parse_gateway_policy

HERE = Path(__file__).parent
BIN = HERE / "node_modules" / ".bin"
FS_SERVER = BIN / "mcp-server-filesystem"
MEMORY_SERVER = BIN / "mcp-server-memory"
PROXY = HERE / "proxy_upstream.py"
TOKEN_KEY = b"g" * 32
AGENT = Principal("u_7", "acme", actor="agent:files")
ERIN = Principal("erin", "acme", roles=frozenset({"fs_approver"}))

POLICY = """
[upstreams.fs]
approver_role = "fs_approver"

[upstreams.fs.tools.read_text_file]
kind = "read"

[upstreams.fs.tools.list_directory]
kind = "read"

[upstreams.fs.tools.write_file]
kind = "write"
side_effect = "reversible"
labels = { path = "File", content = "New content" }
title = "Write {path}"
risk_rules = [
  { argument = "path", matches = "secret", level = "high", reason = "a secret", approvals = 2 },
]
"""

LOOKUP = """
[upstreams.fs.tools.write_file.lookup]
tool = "read_text_file"
arguments = { path = "path" }
found_when = "text_equals"
argument = "content"
"""


def require(binary: Path) -> None:
    """The npm servers are installed by `.ci/run`; in CI a missing one fails, here it skips."""
    if binary.exists():
        return
    message = f"{binary.name} is not installed: npm ci --prefix tests/gateway"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@dataclass
class Upstream:
    """The proxy's switches and log for one upstream."""

    log: Path
    armed: Path
    patch: Path

    @property
    def down(self) -> Path:
        return self.log.with_name("down")

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def calls(self, tool: str) -> int:
        """How many ``tools/call`` of ``tool`` the real server received, across restarts."""
        return sum(
            1 for r in self.requests() if r.get("method") == "tools/call" and r["name"] == tool
        )

    def pids(self) -> list[int]:
        return sorted({r["pid"] for r in self.requests()})


def proxied(
    name: str, server: Path, args: list[str], upstream: Upstream, **extra: Any
) -> UpstreamSpec:
    command = [
        sys.executable, str(PROXY), "--log", str(upstream.log), "--die-on-call", "write_file",
        "--armed", str(upstream.armed), "--patch-schema", str(upstream.patch),
        "--down", str(upstream.down),
        "--", str(server), *args,
    ]  # fmt: skip
    return UpstreamSpec(name=name, command=tuple(command), **extra)


@dataclass
class FsWorld:
    directory: Path
    upstream: Upstream
    store: Store
    gateway: Gateway
    gate: Gate

    def propose(self, tool: str = "fs_write_file", **arguments: Any) -> Proposal:
        return self.gate.propose(AGENT, tool, arguments)

    def write(self, name: str = "note.txt", content: str = "hello, approved world\n") -> Proposal:
        return self.propose(path=str(self.directory / name), content=content)

    def approve(self, proposal: Proposal, approver: Principal = ERIN) -> str:
        decision = Decision(DecisionKind.APPROVE, proposal.version)
        result = self.gate.decide(
            approver, proposal.proposal_id, decision, idempotency_key=f"{approver.subject}-1"
        )
        assert result.confirmation_token is not None
        return result.confirmation_token


def fs_world(
    tmp_path: Path, policy: str = POLICY, *, store: Store | None = None
) -> Iterator[FsWorld]:
    require(FS_SERVER)
    directory = tmp_path / "files"
    directory.mkdir()
    directory = directory.resolve()
    upstream = Upstream(tmp_path / "upstream.log", tmp_path / "armed", tmp_path / "patch")
    spec = proxied("fs", FS_SERVER, [str(directory)], upstream)
    if store is None:
        store = SQLiteStore(tmp_path / "signoff.db")
    store.migrate()
    gateway = Gateway([spec], parse_gateway_policy(tomllib.loads(policy)), store=store)
    with gateway:
        gate = Gate(gateway.catalog(), store, token_key=TOKEN_KEY)
        yield FsWorld(directory, upstream, store, gateway, gate)
    store.close()


@pytest.fixture
def fs(tmp_path: Path) -> Iterator[FsWorld]:
    yield from fs_world(tmp_path)


@pytest.fixture
def fs_lookup(tmp_path: Path) -> Iterator[FsWorld]:
    yield from fs_world(tmp_path, POLICY + LOOKUP)
