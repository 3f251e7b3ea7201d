"""The gate's catalog with the upstreams' write tools in it, following their listings.

Native tools stay as registered. Each upstream's write tools are replaced as a
whole when its listing changes: the new mapping is built aside and swapped in
one assignment, so a reader in another thread sees the old catalog or the new
one, never half of each. A proposal whose tool left the listing cannot execute
(``unknown_tool``); one whose tool changed its schema is ``state_changed``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from signoff.catalog._catalog import AnyTool, Catalog
from signoff.catalog._checks import check_tool
from signoff.gateway._listed import Skipped
from signoff.gateway._tool import UpstreamWriteTool

if TYPE_CHECKING:
    from signoff.gateway._gateway import Gateway


class GatewayCatalog(Catalog):
    """A :class:`~signoff.Catalog` whose upstream tools come from a :class:`Gateway`."""

    def __init__(self, native: Iterable[AnyTool], gateway: Gateway) -> None:
        super().__init__(native)
        self.gateway = gateway
        self._native = dict(self._tools)
        self._native_schemas = dict(self._schemas)
        self._upstream: dict[str, dict[str, UpstreamWriteTool]] = {}

    def replace_upstream(self, upstream: str, tools: Iterable[UpstreamWriteTool]) -> list[Skipped]:
        """Make ``tools`` the upstream's write tools; return those a native tool shadows."""
        skipped = []
        mine: dict[str, UpstreamWriteTool] = {}
        for tool in tools:
            if tool.name in self._native:
                skipped.append(
                    Skipped(upstream, tool.listed.name, f"a native tool is named {tool.name!r}")
                )
                continue
            check_tool(tool)
            mine[tool.name] = tool
        upstreams = {**self._upstream, upstream: mine}
        merged: dict[str, AnyTool] = dict(self._native)
        schemas: dict[str, dict[str, Any]] = dict(self._native_schemas)
        for group in upstreams.values():
            for name, tool in group.items():
                merged[name] = tool
                schemas[name] = dict(tool.listed.strict)
        self._upstream = upstreams
        # Two assignments, schemas first: whoever finds a tool in _tools finds its schema too.
        self._schemas = schemas
        self._tools = merged
        return skipped

    def upstream_tools(self) -> list[UpstreamWriteTool]:
        return [tool for group in self._upstream.values() for tool in group.values()]
