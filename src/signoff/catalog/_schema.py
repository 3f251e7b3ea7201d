"""Strict JSON Schema for tool arguments (the OpenAI strict-mode rules)."""

from __future__ import annotations

import copy
from typing import Any

import pydantic

from signoff.exceptions import CatalogError


def strict_json_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """Every object closed, every property required, optional ones nullable.

    An argument with a default would be published as required (strict mode has
    no optional properties) yet parsed as optional: it is refused at declaration
    time, so the schema a model sees and the parser always agree. An optional
    argument is ``X | None`` without a default; the model sends ``null``.
    """
    schema = copy.deepcopy(model.model_json_schema(mode="validation"))
    _tighten(schema, path=model.__name__)
    for name, sub in schema.get("$defs", {}).items():
        _tighten(sub, path=name)
    return schema


def _tighten(node: Any, *, path: str) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item, path=path)
        return
    if not isinstance(node, dict):
        return
    if node.get("type") == "object" or "properties" in node:
        properties: dict[str, Any] = node.get("properties", {})
        required = set(node.get("required", []))
        for prop in properties:
            if prop not in required:
                raise CatalogError(
                    f"{path}.{prop} has a default; strict arguments are all required: "
                    f"declare it `{prop}: X | None` without a default (the model sends null)"
                )
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for key, value in node.items():
        if key != "$defs":
            _tighten(value, path=path)
