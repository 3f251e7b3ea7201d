"""Tool schemas portable to every MCP client and JSON Schema validator (issue 24).

The MCP Inspector warned 39 times on signoff's tools: `type` arrays (`["string", "null"]`)
and `machine_value` without a type. Every schema node that describes a value now has a
`type` (or is a union, `anyOf`/`oneOf`, of nodes that do), and no `type` is a list.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema

from signoff.agents import agent_tools
from signoff.demo import DemoShop, demo_catalog
from signoff.mcp_server import tool_definitions

COMBINATORS = ("anyOf", "oneOf", "allOf")


def value_nodes(schema: Any, where: str = "$") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node that describes a value: the root, properties, items, union branches."""
    if not isinstance(schema, dict):
        return
    yield where, schema
    for name, sub in (schema.get("properties") or {}).items():
        yield from value_nodes(sub, f"{where}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from value_nodes(schema["items"], f"{where}[]")
    for key in COMBINATORS:
        for i, sub in enumerate(schema.get(key) or []):
            yield from value_nodes(sub, f"{where}.{key}[{i}]")
    for name, sub in (schema.get("$defs") or {}).items():
        yield from value_nodes(sub, f"{where}.$defs.{name}")


def test_every_schema_node_has_one_type_or_is_a_union(tmp_path: Path) -> None:
    """No `type` arrays; no untyped value (a `$ref` counts, it points at a typed node)."""
    shop = DemoShop(str(tmp_path / "shop.db"))
    try:
        tools = tool_definitions(agent_tools(demo_catalog(shop)))
    finally:
        shop.close()
    problems = []
    for tool in tools:
        for part in ("inputSchema", "outputSchema"):
            jsonschema.Draft202012Validator.check_schema(tool[part])
            for where, node in value_nodes(tool[part]):
                label = f"{tool['name']} {part} {where}"
                if isinstance(node.get("type"), list):
                    problems.append(f"{label}: type array {node['type']}")
                typed = "type" in node or "$ref" in node or any(k in node for k in COMBINATORS)
                if not typed:
                    problems.append(f"{label}: no type")
    assert problems == []
