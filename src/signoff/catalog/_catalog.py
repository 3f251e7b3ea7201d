"""The registry of write tools a gate guards."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from signoff.catalog._schema import strict_json_schema
from signoff.catalog._tool import StrictArgs, WriteTool
from signoff.catalog._types import SideEffect
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
        name = getattr(tool, "name", None)
        if not isinstance(name, str) or not name.isidentifier():
            raise CatalogError(f"tool name must be an identifier, got {name!r}")
        if name in self._tools:
            raise CatalogError(f"tool {name!r} is already registered")
        if not isinstance(getattr(tool, "side_effect", None), SideEffect):
            raise CatalogError(f"tool {name!r} must declare side_effect explicitly")
        model = getattr(tool, "args_model", None)
        if not (isinstance(model, type) and issubclass(model, StrictArgs)):
            raise CatalogError(f"tool {name!r}: args_model must subclass signoff.StrictArgs")
        self._schemas[name] = strict_json_schema(model)
        self._tools[name] = tool

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
