"""One upstream MCP server, reached with the official SDK's ``Client``.

The session lives in the gateway's own event loop (a thread with an anyio
blocking portal), so the gate's worker threads, the reconciler and the MCP
server's loop all call it the same way. What the upstream receives is only
what the deployment configured: the child's environment (``env``, ``env_from``)
or the HTTP headers and bearer token — never the agent's token, which stays
on signoff's side with the agent's and the approver's identities.

Calls report what is known about delivery: :class:`NotSent` when the request
certainly did not leave (no session, and reconnecting failed), :class:`Lost`
when it may have reached the upstream and no answer came (a transport failure
or a timeout after sending). A lost write is ``unknown``, never sent again.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from signoff import __version__
from signoff.gateway._config import UpstreamSpec

log = logging.getLogger("signoff.gateway")
MAX_PAGES = 100
CONNECT_TIMEOUT_SECONDS = 60.0


class NotSent(Exception):
    """The request never left signoff: the upstream could not be reached."""


class Lost(Exception):
    """The request may have reached the upstream; its answer did not come back."""


class Refused(Exception):
    """The upstream answered the request with a JSON-RPC error (it did not run the tool)."""


class UpstreamConnection:
    """A session with one upstream, opened on first use and again after it broke."""

    def __init__(
        self, spec: UpstreamSpec, *, on_list_changed: Callable[[], Awaitable[None]]
    ) -> None:
        self.spec = spec
        self._on_list_changed = on_list_changed
        self._client: Client | None = None
        self._stop: anyio.Event | None = None
        self._lock = anyio.Lock()
        self._group: Any = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the task group that owns this upstream's sessions (inside the portal)."""
        async with anyio.create_task_group() as group:
            self._group = group
            task_status.started()
            await anyio.sleep_forever()

    async def list_tools(self) -> list[types.Tool]:
        """Every tool the upstream lists now (all pages, never a cached answer)."""
        client = await self._session()
        try:
            return await _list_all(client)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            await self._drop(client)
            log.info("upstream %s: listing failed (%s); reconnecting", self.spec.name, exc)
        client = await self._session()
        try:
            return await _list_all(client)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            await self._drop(client)
            raise NotSent(f"upstream {self.spec.name} does not answer: {exc}") from None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Send one ``tools/call`` on the current session; never sent twice from here."""
        client = await self._session()
        try:
            return await client.session.call_tool(
                name, arguments, read_timeout_seconds=self.spec.timeout_seconds
            )
        except MCPError as exc:
            if exc.code in (CONNECTION_CLOSED, REQUEST_TIMEOUT):
                await self._drop(client)
                raise Lost(f"upstream {self.spec.name}: {exc.error.message}") from None
            raise Refused(exc.error.message) from None
        except Exception as exc:  # transport errors, an answer that does not parse
            await self._drop(client)
            raise Lost(f"upstream {self.spec.name}: {type(exc).__name__}") from None

    async def close(self) -> None:
        async with self._lock:
            if self._stop is not None:
                self._stop.set()
            self._client = None
            self._stop = None

    async def _session(self) -> Client:
        async with self._lock:
            if self._client is not None:
                return self._client
            if self._group is None:
                raise NotSent(f"upstream {self.spec.name} is not started")
            try:
                with anyio.fail_after(CONNECT_TIMEOUT_SECONDS):
                    self._client = await self._group.start(self._own)
            except Exception as exc:
                raise NotSent(
                    f"cannot connect to upstream {self.spec.name}: {_reason(exc)}"
                ) from None
            assert self._client is not None
            return self._client

    async def _own(self, *, task_status: TaskStatus[Client]) -> None:
        """Open a session and keep it (its task groups live in this one task) until dropped."""
        stop = anyio.Event()
        client: Client | None = None
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(
                        await self._transport(stack),
                        mode="auto",
                        message_handler=self._message,
                        client_info=types.Implementation(
                            name="signoff-gateway", version=__version__
                        ),
                        cache=None,
                    )
                )
                self._stop = stop
                task_status.started(client)
                await stop.wait()
        except Exception as exc:
            if client is None:
                raise  # start() hands it to the caller that wanted the session
            # The session ended on its own (the process exited, the stream broke).
            log.info("upstream %s: session ended: %s", self.spec.name, _reason(exc))
            if self._client is client:
                self._client = None
                self._stop = None

    async def _transport(self, stack: AsyncExitStack) -> Any:
        spec = self.spec
        if spec.url is None:
            env = {name: os.environ[name] for name in spec.env_from if name in os.environ}
            return StdioServerParameters(
                command=spec.command[0],
                args=list(spec.command[1:]),
                env={**env, **spec.env},
                cwd=spec.cwd,
            )
        headers = dict(spec.headers)
        if spec.bearer_token_env is not None:
            token = os.environ.get(spec.bearer_token_env)
            if not token:
                raise NotSent(f"the variable {spec.bearer_token_env} holds no token")
            headers["Authorization"] = f"Bearer {token}"
        http: httpx2.AsyncClient = await stack.enter_async_context(
            create_mcp_http_client(headers=headers)
        )
        return streamable_http_client(spec.url, http_client=http)

    async def _drop(self, client: Client) -> None:
        """Forget a broken session; the next call opens a new one."""
        async with self._lock:
            if self._client is client:
                if self._stop is not None:
                    self._stop.set()
                self._client = None
                self._stop = None

    async def _message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            # Refetch outside the session's receive loop, which the listing itself needs.
            if self._group is not None:
                self._group.start_soon(self._on_list_changed)
        elif isinstance(message, Exception):
            log.info("upstream %s: %s", self.spec.name, type(message).__name__)
        await anyio.lowlevel.checkpoint()


async def _list_all(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools
    raise MCPError(code=CONNECTION_CLOSED, message="the tool listing does not end")


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _reason(exc.exceptions[0])
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return f"{type(exc).__name__}: {exc}"
