"""The gate's catalog with the upstreams' write tools in it, following their listings.

Native tools stay as registered. Each upstream's write tools are replaced as a
whole when its listing changes: the new mapping is built aside and swapped in
one assignment, so a reader in another thread sees the old catalog or the new
one, never half of each. A proposal whose tool left the listing cannot execute
(``unknown_tool``); one whose tool changed its schema is ``state_changed``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from signoff.catalog._catalog import AnyTool, Catalog
from signoff.catalog._checks import check_tool
from signoff.exceptions import CatalogError, UnknownTool
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
        self._snapshot: tuple[dict[str, AnyTool], dict[str, dict[str, Any]]] = (
            dict(self._tools),
            dict(self._schemas),
        )

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
        self._upstream = {**self._upstream, upstream: mine}
        self._rebuild()
        return skipped

    def register(self, tool: AnyTool) -> None:
        """A native tool; registered after the upstreams', it still wins over one of its name."""
        if "_snapshot" not in self.__dict__:
            super().register(tool)  # during __init__
            return
        schema = check_tool(tool)
        if tool.name in self._native:
            raise CatalogError(f"tool {tool.name!r} is already registered")
        self._native[tool.name] = tool
        self._native_schemas[tool.name] = schema
        self._rebuild()

    def _rebuild(self) -> None:
        merged: dict[str, AnyTool] = {}
        schemas: dict[str, dict[str, Any]] = {}
        for group in self._upstream.values():
            for name, tool in group.items():
                merged[name] = tool
                schemas[name] = dict(tool.listed.strict)
        merged.update(self._native)  # a native tool wins over an upstream's of its name
        schemas.update(self._native_schemas)
        self._snapshot = (merged, schemas)  # one assignment: readers see all old or all new
        self._tools, self._schemas = merged, schemas

    def get(self, name: str) -> AnyTool:
        tools, _ = self._snapshot
        try:
            return tools[name]
        except KeyError:
            raise UnknownTool(f"no tool named {name!r}", tool=name) from None

    def schema(self, name: str) -> dict[str, Any]:
        tools, schemas = self._snapshot
        if name not in tools:
            raise UnknownTool(f"no tool named {name!r}", tool=name)
        return schemas[name]

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(list(self._snapshot[0].values()))

    def __len__(self) -> int:
        return len(self._snapshot[0])

    def upstream_tools(self) -> list[UpstreamWriteTool]:
        tools = self._snapshot[0]
        return [
            t for group in self._upstream.values() for t in group.values() if tools.get(t.name) is t
        ]
