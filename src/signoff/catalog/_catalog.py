"""The registry of write tools a gate guards."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from signoff.catalog._checks import check_tool
from signoff.catalog._tool import WriteTool
from signoff.exceptions import CatalogError, UnknownTool

AnyTool = WriteTool[Any]


class Catalog:
    """Tools by name, each checked when registered."""

    def __init__(self, tools: Iterable[AnyTool] = ()) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._schemas: dict[str, dict[str, Any]] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: AnyTool) -> None:
        """Check the declaration (docs/TOOLS.md) and add the tool; a mistake is a CatalogError."""
        if isinstance(tool, type):
            raise CatalogError(
                f"{tool.__name__} is a class; register an instance of it: "
                f"Catalog([{tool.__name__}(...)])"
            )
        schema = check_tool(tool)
        if tool.name in self._tools:
            raise CatalogError(f"tool {tool.name!r} is already registered")
        self._schemas[tool.name] = schema
        self._tools[tool.name] = tool

    def get(self, name: str) -> AnyTool:
        try:
            return self._tools[name]
        except KeyError:
            raise UnknownTool(f"no tool named {name!r}", tool=name) from None

    def schema(self, name: str) -> dict[str, Any]:
        self.get(name)
        return self._schemas[name]

    def __iter__(self) -> Iterator[AnyTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)
