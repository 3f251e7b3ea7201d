"""Strict JSON Schema for tool arguments (the OpenAI strict-mode rules)."""

from __future__ import annotations

import copy
from typing import Any

import pydantic

from signoff.exceptions import CatalogError


def strict_json_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """Every object closed, every property required, optional ones nullable.

    A field with a non-null default cannot be expressed in strict mode and is
    refused at declaration time rather than silently changed.
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
        for prop, sub in properties.items():
            if prop not in required and not _nullable(sub):
                raise CatalogError(
                    f"{path}.{prop} is optional but not nullable; strict schemas need "
                    "every property required, optional ones as `X | None`"
                )
            sub.pop("default", None)
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for key, value in node.items():
        if key != "$defs":
            _tighten(value, path=path)


def _nullable(sub: dict[str, Any]) -> bool:
    if sub.get("type") == "null":
        return True
    return any(isinstance(o, dict) and o.get("type") == "null" for o in sub.get("anyOf", []))
