"""The gateway: upstream MCP servers in front of which signoff stands.

``Gateway(specs, policy, store=…)`` connects to every upstream when started,
lists its tools and classifies them with the policy. Writes become tools of the
gate's catalog (:meth:`Gateway.catalog`); reads are passed through
(:meth:`Gateway.call_read`), each one audited in the caller's tenant chain with
digests of what was asked and answered, never the values. When an upstream's
listing changes (``notifications/tools/list_changed``, a reconnect, or the
check before each write) the catalog follows it and every registered listener
(the MCP server's tool list) is told.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import mcp_types as types
import rfc8785
from anyio.from_thread import BlockingPortal, start_blocking_portal

from signoff._clock import Clock, SystemClock, to_micros
from signoff._model import Principal
from signoff.catalog._catalog import AnyTool
from signoff.catalog._types import (
    LookupOutcome,
    NotFoundAtProvider,
    ProviderOutcome,
    ProviderTimeout,
    RetryableFailure,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import (
    InvalidArguments,
    StoreUnavailable,
    UnknownTool,
    UpstreamUnavailable,
)
from signoff.gateway._catalog import GatewayCatalog
from signoff.gateway._config import UpstreamSpec
from signoff.gateway._connection import Lost, NotSent, Refused, UpstreamConnection
from signoff.gateway._listed import ListedTool, Skipped, classify
from signoff.gateway._policy import GatewayPolicy, LookupRule
from signoff.gateway._schema import result_digest
from signoff.gateway._tool import write_tool
from signoff.store._base import Store

log = logging.getLogger("signoff.gateway")
READ_EVENT = "gateway.read"
MAX_RESULTS = 256
MAX_MESSAGE = 500

Listener = Callable[[], None]


class Gateway:
    """Upstream MCP servers, their tools classified by the policy, and the calls to them."""

    def __init__(
        self,
        specs: Sequence[UpstreamSpec],
        policy: GatewayPolicy | None = None,
        *,
        store: Store | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.specs = tuple(specs)
        self.policy = policy or GatewayPolicy()
        self.store = store
        self.clock = clock or SystemClock()
        self._portal_cm: AbstractContextManager[BlockingPortal] | None = None
        self._portal: BlockingPortal | None = None
        self._connections: dict[str, UpstreamConnection] = {}
        self._listed: dict[str, dict[str, ListedTool]] = {}
        self._skipped: dict[str, list[Skipped]] = {}
        self._catalog: GatewayCatalog | None = None
        self._listeners: list[Listener] = []
        self._results: OrderedDict[str, types.CallToolResult] = OrderedDict()
        self._lock = threading.Lock()
        self._runners: list[Any] = []

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> Gateway:
        """Connect to every upstream and list its tools; an unreachable one stops the start."""
        if self._portal is not None:
            return self
        self._portal_cm = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        try:
            for spec in self.specs:
                connection = UpstreamConnection(
                    spec, on_list_changed=functools.partial(self._refresh_async, spec.name)
                )
                runner, _ = self._portal.start_task(connection.run)
                self._runners.append(runner)
                self._connections[spec.name] = connection
            for spec in self.specs:
                self.refresh(spec.name, strict=True)
                self._warn_unlisted(spec.name)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        portal, cm = self._portal, self._portal_cm
        if portal is None or cm is None:
            return
        for connection in self._connections.values():
            try:
                portal.call(connection.close)
            except Exception:  # noqa: S112 - closing what may already be gone
                continue
        for runner in self._runners:
            runner.cancel()
        self._portal = None
        self._portal_cm = None
        cm.__exit__(None, None, None)

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what is exposed ----------------------------------------------------------------------

    def catalog(self, native: Iterable[AnyTool] = ()) -> GatewayCatalog:
        """The gate's catalog: ``native`` tools and every upstream's write tools (made once)."""
        if self._catalog is None:
            self._catalog = GatewayCatalog(native, self)
            for upstream in self._listed:
                self._install(upstream)
        return self._catalog

    @property
    def reads(self) -> list[ListedTool]:
        """The tools the policy classifies as reads, passed through by name."""
        return [t for group in self._listed.values() for t in group.values() if t.is_read]

    @property
    def writes(self) -> list[ListedTool]:
        return [t for group in self._listed.values() for t in group.values() if not t.is_read]

    @property
    def skipped(self) -> list[Skipped]:
        return [s for group in self._skipped.values() for s in group]

    def read_tool(self, exposed: str) -> ListedTool:
        for tool in self.reads:
            if tool.exposed == exposed:
                return tool
        raise UnknownTool(f"no tool named {exposed!r}", tool=exposed)

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener()`` (from the gateway's thread) whenever the exposed tools change."""
        self._listeners.append(listener)

    def result(self, reference: str | None) -> types.CallToolResult | None:
        """The upstream's answer to a recent write, by the digest its receipt carries."""
        if reference is None:
            return None
        with self._lock:
            return self._results.get(reference)

    # -- listings -----------------------------------------------------------------------------

    def refresh(self, upstream: str, *, strict: bool = False) -> bool:
        """List the upstream's tools again; True when what signoff exposes changed."""
        connection = self._connections[upstream]
        try:
            tools = self._call(connection.list_tools)
        except NotSent as exc:
            if strict:
                raise UpstreamUnavailable(str(exc), upstream=upstream) from None
            log.warning("upstream %s: %s", upstream, exc)
            return False
        return self._apply(upstream, tools)

    async def _refresh_async(self, upstream: str) -> None:
        try:
            tools = await self._connections[upstream].list_tools()
        except NotSent as exc:
            log.warning("upstream %s: %s", upstream, exc)
            return
        self._apply(upstream, tools)

    def _apply(self, upstream: str, tools: list[types.Tool]) -> bool:
        listed, skipped = classify(upstream, tools, self.policy.upstream(upstream))
        new = {tool.exposed: tool for tool in listed}
        with self._lock:
            old = self._listed.get(upstream)
            changed = old is None or _shape(old) != _shape(new)
            self._listed[upstream] = new
            self._skipped[upstream] = skipped
        for item in skipped:
            log.warning("upstream %s: %s is not exposed: %s", upstream, item.name, item.reason)
        if changed:
            if old is not None:
                log.warning("upstream %s: its tool list changed; the catalog follows it", upstream)
            self._install(upstream)
            for listener in list(self._listeners):
                try:
                    listener()
                except Exception:
                    log.exception("a listener of upstream %s failed", upstream)
        return changed

    def _install(self, upstream: str) -> None:
        if self._catalog is None:
            return
        writes = [write_tool(t, self) for t in self._listed[upstream].values() if not t.is_read]
        shadowed = self._catalog.replace_upstream(upstream, writes)
        with self._lock:
            self._skipped[upstream] = [*self._skipped.get(upstream, []), *shadowed]

    def _warn_unlisted(self, upstream: str) -> None:
        names = {t.name for t in self._listed.get(upstream, {}).values()}
        names |= {s.name for s in self._skipped.get(upstream, [])}
        for tool in self.policy.upstream(upstream).tools:
            if tool not in names:
                log.warning(
                    "the policy names %s.%s, which the upstream does not list", upstream, tool
                )

    # -- calls --------------------------------------------------------------------------------

    def call_read(
        self, principal: Principal, exposed: str, arguments: Mapping[str, Any] | str | bytes
    ) -> types.CallToolResult:
        """Pass a read through to its upstream and audit it in the caller's tenant chain."""
        tool = self.read_tool(exposed)
        values = tool.arguments(arguments)
        result = self._read(tool, tool.upstream_arguments(values))
        self._audit_read(principal, tool, values, result)
        return result

    def _read(self, tool: ListedTool, arguments: dict[str, Any]) -> types.CallToolResult:
        connection = self._connections[tool.upstream]
        for attempt in (1, 2):
            try:
                result: types.CallToolResult = self._call(
                    connection.call_tool, tool.name, arguments
                )
                return result
            except Refused as exc:
                return _error_result(str(exc))
            except NotSent as exc:
                raise UpstreamUnavailable(str(exc), upstream=tool.upstream) from None
            except Lost as exc:
                # A read may be asked again: the policy says it changes nothing.
                if attempt == 2:
                    raise UpstreamUnavailable(str(exc), upstream=tool.upstream) from None
        raise AssertionError("unreachable")

    def call_write(self, listed: ListedTool, values: dict[str, Any]) -> ProviderOutcome:
        """The one call of a confirmed write (``UpstreamWriteTool.execute``)."""
        connection = self._connections.get(listed.upstream)
        if connection is None:
            return RetryableFailure(f"upstream {listed.upstream} is not configured; nothing sent")
        try:
            # The listing now, before sending: the connection is alive and the schema the
            # person approved is still the upstream's.
            tools = self._call(connection.list_tools)
        except NotSent as exc:
            return RetryableFailure(f"{exc}; nothing was sent")
        self._apply(listed.upstream, tools)
        current = self._listed.get(listed.upstream, {}).get(listed.exposed)
        if current is None or current.digest != listed.digest or current.is_read:
            return TerminalFailure(
                "the upstream tool changed or left the listing since the approval; nothing was "
                "sent",
                code="state_changed",
            )
        try:
            result = self._call(
                connection.call_tool, listed.name, listed.upstream_arguments(values)
            )
        except NotSent as exc:
            return RetryableFailure(f"{exc}; nothing was sent")
        except Refused as exc:
            return TerminalFailure(_short(str(exc)), code="upstream_refused")
        except Lost as exc:
            raise ProviderTimeout(str(exc)) from None
        if result.is_error:
            return TerminalFailure(_short(_text(result)), code="upstream_tool_error")
        reference = result_digest(_dump(result))
        with self._lock:
            self._results[reference] = result
            while len(self._results) > MAX_RESULTS:
                self._results.popitem(last=False)
        return Succeeded(reference)

    def look_up(self, listed: ListedTool, request_key: str) -> LookupOutcome:
        """After a lost answer: the policy's lookup read, or a person (this raises)."""
        rule = listed.policy.lookup
        if rule is None:
            raise LookupUnavailable(
                f"the policy names no lookup for {listed.upstream}.{listed.name}: a person "
                "must settle it"
            )
        values = self._proposal_arguments(request_key)
        lookup = self._listed.get(listed.upstream, {}).get(f"{listed.upstream}_{rule.tool}")
        if lookup is None or not lookup.is_read:
            raise LookupUnavailable(f"the lookup tool {rule.tool} is not a read of the upstream")
        arguments = _lookup_arguments(rule, values)
        for name in lookup.strict.get("properties", {}):
            arguments.setdefault(name, None)  # what the rule does not map is left out
        try:
            result = self._read(lookup, lookup.upstream_arguments(lookup.arguments(arguments)))
        except UpstreamUnavailable as exc:
            raise LookupUnavailable(exc.message) from None
        if result.is_error:
            return NotFoundAtProvider()
        if _found(rule, result, values):
            return Succeeded("lookup:" + result_digest(_dump(result)))
        return NotFoundAtProvider()

    def _proposal_arguments(self, request_key: str) -> dict[str, Any]:
        if self.store is None:
            raise LookupUnavailable("the gateway has no store to read the proposal from")
        with self.store.read() as tx:
            found = tx.proposal_id_for_request_key(request_key)
            proposal = None if found is None else tx.proposal(found[0], found[1])
        if proposal is None:
            raise LookupUnavailable(f"no proposal has the request key {request_key}")
        return dict(proposal.arguments)

    def _audit_read(
        self,
        principal: Principal,
        tool: ListedTool,
        values: Mapping[str, Any],
        result: types.CallToolResult,
    ) -> None:
        if self.store is None:
            return
        data = {
            "upstream": tool.upstream,
            "tool": tool.name,
            "tool_version": tool.version,
            "args_digest": _digest(values),
            "result_digest": result_digest(_dump(result)),
            "is_error": bool(result.is_error),
            "surface": principal.client,
        }
        try:
            with self.store.transaction() as tx:
                tx.append_audit(
                    tenant=principal.tenant,
                    at=to_micros(self.clock.now()),
                    kind=READ_EVENT,
                    actor=principal.label(),
                    data=data,
                )
        except Exception as exc:
            # No answer without its audit event.
            raise StoreUnavailable(f"the read could not be audited: {type(exc).__name__}") from exc

    def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        portal = self._portal
        if portal is None:
            raise NotSent("the gateway is not started")
        return portal.call(function, *args)


class LookupUnavailable(Exception):
    """A lookup that cannot tell: the execution stays unknown, then a person settles it."""


def _shape(tools: Mapping[str, ListedTool]) -> set[tuple[str, str, str, str]]:
    return {(t.exposed, t.digest, t.policy.kind, t.policy.version) for t in tools.values()}


def _dump(result: types.CallToolResult) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    dumped.pop("_meta", None)
    return dumped


def _digest(values: Mapping[str, Any]) -> str:
    try:
        data = rfc8785.dumps(dict(values))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise InvalidArguments(f"arguments cannot be canonicalized: {exc}") from None
    return hashlib.sha256(data).hexdigest()


def _text(result: types.CallToolResult) -> str:
    parts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    return "\n".join(parts) or "the upstream tool reported an error"


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _lookup_arguments(rule: LookupRule, values: Mapping[str, Any]) -> dict[str, Any]:
    missing = [source for source in rule.arguments.values() if source not in values]
    if missing:
        raise LookupUnavailable(f"the lookup takes {missing}, which the write does not have")
    return {name: values[source] for name, source in rule.arguments.items()}


def _found(rule: LookupRule, result: types.CallToolResult, values: Mapping[str, Any]) -> bool:
    if rule.found_when == "ok":
        return True
    expected = values.get(rule.argument or "")
    if not isinstance(expected, str):
        return False
    text = _text(result)
    if isinstance(result.structured_content, dict):
        content = result.structured_content.get("content")
        if isinstance(content, str):
            text = content
    if rule.found_when == "text_equals":
        return text == expected
    return expected in text


__all__ = ["READ_EVENT", "Gateway", "LookupUnavailable"]
