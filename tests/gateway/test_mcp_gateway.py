"""signoff's own MCP server in front of upstreams: prefixed tools, pass-through reads, the
confirmation tools for writes, a tool list that follows the upstream, configured credentials."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.types import ASGIApp, Receive, Scope, Send

from signoff import Gate, SQLiteStore
from signoff.gateway import Gateway, GatewayPolicy, UpstreamSpec, parse_gateway_policy
from signoff.http import Settings, create_app
from signoff.mcp_server import StaticIdentity, create_mcp_server, include_mcp
from tests.gateway.conftest import AGENT, ERIN, TOKEN_KEY, FsWorld
from tests.http.conftest import token_for

pytestmark = pytest.mark.slow


def test_the_mcp_client_sees_prefixed_reads_and_confirmation_tools_for_writes(
    fs: FsWorld,
) -> None:
    """Reads pass through under fs_<tool>; writes only as request/execute; the file waits."""
    server = create_mcp_server(fs.gate, StaticIdentity(AGENT))
    (fs.directory / "seen.txt").write_text("read through signoff")
    target = fs.directory / "mcp.txt"

    async def body() -> dict[str, Any]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert "fs_write_file" not in tools
            assert tools["fs_read_text_file"].annotations.read_only_hint is True  # type: ignore[union-attr]
            assert tools["request_fs_write_file_confirmation"].input_schema["required"] == [
                "path",
                "content",
                "signoff_mandate_id",  # the request tool's reserved ids, never the upstream's
                "signoff_supersedes",
            ]
            assert "execute_confirmed_fs_create_directory" in tools  # unlisted: a write
            read = await client.call_tool(
                "fs_read_text_file",
                {"path": str(fs.directory / "seen.txt"), "head": None, "tail": None},
            )
            assert read.structured_content == {"content": "read through signoff"}
            asked = await client.call_tool(
                "request_fs_write_file_confirmation", {"path": str(target), "content": "via MCP"}
            )
            proposal = asked.structured_content
            assert proposal is not None and proposal["status"] == "awaiting_confirmation"
            assert not target.exists()
            fs.approve(fs.gate.proposal(ERIN, proposal["proposal_id"]))
            status = await client.call_tool(
                "get_proposal_status", {"proposal_id": proposal["proposal_id"]}
            )
            assert status.structured_content is not None
            token = status.structured_content["confirmation_token"]
            done = await client.call_tool(
                "execute_confirmed_fs_write_file",
                {"proposal_id": proposal["proposal_id"], "confirmation_token": token},
            )
            assert done.structured_content is not None
            # After signoff's JSON, the upstream's own answer to the one call.
            assert "Successfully wrote" in done.content[-1].text  # type: ignore[union-attr]
            return dict(done.structured_content)

    executed = anyio.run(body)
    assert executed["status"] == "succeeded" and executed["receipt"]["provider_reference"]
    assert target.read_text() == "via MCP"
    assert fs.upstream.calls("write_file") == 1


def test_the_tool_list_follows_the_upstream(fs: FsWorld) -> None:
    """After notifications/tools/list_changed, tools/list shows the upstream's new schema."""
    server = create_mcp_server(fs.gate, StaticIdentity(AGENT))
    fs.upstream.patch.write_text("write_file")
    os.kill(fs.upstream.pids()[-1], signal.SIGUSR1)

    async def body() -> set[str]:
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            listed = tools["request_fs_write_file_confirmation"].input_schema["properties"]
            return set(listed) - {"signoff_mandate_id", "signoff_supersedes"}

    deadline = time.monotonic() + 30
    while anyio.run(body) != {"path", "content", "mode"}:
        assert time.monotonic() < deadline, "the MCP tool list never followed the upstream"
        time.sleep(0.05)
    assert "mode" in fs.gate.catalog.schema("fs_write_file")["properties"]


class _Recording:
    """Remembers the Authorization header of every request the upstream receives."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            value = headers.get(b"authorization")
            self.seen.append(None if value is None else value.decode())
        await self.app(scope, receive, send)


def _serve(app: ASGIApp) -> Iterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the server did not start"
        time.sleep(0.01)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
def kv_upstream() -> Iterator[tuple[str, _Recording, dict[str, str]]]:
    """A remote MCP server (streamable HTTP) with one read and one write tool."""
    values: dict[str, str] = {}
    upstream = MCPServer("kv")

    @upstream.tool()
    def get_value(key: str) -> str:
        """Read a value."""
        return values.get(key, "")

    @upstream.tool()
    def set_value(key: str, value: str) -> str:
        """Store a value."""
        values[key] = value
        return "stored"

    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    recording = _Recording(upstream.streamable_http_app(transport_security=security))
    for url in _serve(recording):
        yield url, recording, values


def test_an_http_upstream_gets_the_configured_credentials_never_the_agents_token(
    tmp_path: Any, kv_upstream: tuple[str, _Recording, dict[str, str]], monkeypatch: Any
) -> None:
    """The agent calls signoff's /mcp with its JWT; the upstream sees only the deployment's
    bearer token, and its write waits for a person."""
    url, recording, values = kv_upstream
    monkeypatch.setenv("KV_UPSTREAM_TOKEN", "the-deployments-token")
    spec = UpstreamSpec("kv", url=f"{url}/mcp", bearer_token_env="KV_UPSTREAM_TOKEN")
    policy = parse_gateway_policy({"upstreams": {"kv": {"tools": {"get_value": {"kind": "read"}}}}})
    store = SQLiteStore(tmp_path / "signoff.db")
    store.migrate()
    agent_jwt = token_for(AGENT)
    with Gateway([spec], policy, store=store) as gateway:
        gate = Gate(gateway.catalog(), store, token_key=TOKEN_KEY)
        app = create_app(Settings(demo=True), gate=gate, extras=[include_mcp])
        for base in _serve(app):

            async def body(base: str = base) -> dict[str, Any]:
                headers = {"Authorization": f"Bearer {agent_jwt}"}
                async with create_mcp_http_client(headers=headers) as http:
                    transport = streamable_http_client(f"{base}/mcp", http_client=http)
                    async with Client(transport) as client:
                        values["colour"] = "green"
                        read = await client.call_tool("kv_get_value", {"key": "colour"})
                        assert read.structured_content == {"result": "green"}
                        asked = await client.call_tool(
                            "request_kv_set_value_confirmation", {"key": "colour", "value": "red"}
                        )
                        assert asked.structured_content is not None
                        return dict(asked.structured_content)

            proposal = anyio.run(body)
    store.close()
    assert proposal["status"] == "awaiting_confirmation" and proposal["approval"]["role"] == (
        "kv_approver"
    )
    assert values == {"colour": "green"}  # the write waits for a person
    assert recording.seen and set(recording.seen) == {"Bearer the-deployments-token"}
    assert all(agent_jwt not in (seen or "") for seen in recording.seen)


def test_an_unreachable_upstream_stops_the_start(tmp_path: Any) -> None:
    """A wrong command is one typed error at start, not a server with missing tools."""
    from signoff.exceptions import UpstreamUnavailable

    spec = UpstreamSpec("fs", command=(str(tmp_path / "no-such-server"),))
    with pytest.raises(UpstreamUnavailable, match="cannot connect"):
        Gateway([spec], GatewayPolicy()).start()


def test_a_stdio_upstream_gets_only_the_configured_environment(
    tmp_path: Any, monkeypatch: Any
) -> None:
    """env and env_from reach the child; signoff's own secrets and other variables do not."""
    import sys
    from pathlib import Path

    monkeypatch.setenv("SIGNOFF_TOKEN_KEY", "00" * 32)
    monkeypatch.setenv("PASSED_ON", "yes")
    monkeypatch.setenv("NOT_PASSED", "no")
    server = Path(__file__).with_name("env_server.py")
    spec = UpstreamSpec(
        "env",
        command=(sys.executable, str(server)),
        env={"LITERAL": "given"},
        env_from=("PASSED_ON",),
    )
    policy = parse_gateway_policy(
        {"upstreams": {"env": {"tools": {"variables": {"kind": "read"}}}}}
    )
    with Gateway([spec], policy) as gateway:
        answer = gateway.call_read(AGENT, "env_variables", {})
    names = set((answer.structured_content or {})["result"])
    assert {"LITERAL", "PASSED_ON"} <= names
    assert not names & {"SIGNOFF_TOKEN_KEY", "NOT_PASSED"}
