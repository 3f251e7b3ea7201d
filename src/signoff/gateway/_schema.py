"""An upstream tool's input schema made strict, its digest, and arguments checked against it.

Strict as the OpenAI strict mode (and signoff's ``StrictArgs``) wants it: every
object closed (``additionalProperties: false``), every property required, the
ones the upstream made optional nullable — the agent sends ``null`` for "leave it
out", and the gateway leaves it out of the upstream call. A schema that cannot be
closed (a free-form map, ``patternProperties``) is refused: the tool is not exposed
rather than exposed loosely.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import jsonschema
import rfc8785
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator

from signoff._canonical import canonical_json
from signoff.exceptions import InvalidArguments

MAX_ERRORS = 20


class NotStrictable(Exception):
    """The upstream's schema cannot be made strict; the tool is left out (fail closed)."""


def schema_digest(input_schema: Mapping[str, Any]) -> str:
    """Hex SHA-256 of the RFC 8785 form of the upstream's own input schema."""
    try:
        return hashlib.sha256(rfc8785.dumps(dict(input_schema))).hexdigest()
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise NotStrictable(f"the input schema cannot be canonicalized: {exc}") from None


def result_digest(result: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of what the upstream answered (RFC 8785), for the receipt."""
    try:
        data = rfc8785.dumps(dict(result))
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        data = json.dumps(result, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def strict_schema(input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The strict copy the agent sees and the arguments are checked against."""
    schema = copy.deepcopy(dict(input_schema))
    if schema.get("type") not in (None, "object"):
        raise NotStrictable("the input schema is not an object")
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    try:
        _validator_class(schema).check_schema(schema)
    except SchemaError as exc:
        raise NotStrictable(f"the input schema is not valid JSON Schema: {exc.message}") from None
    _tighten(schema, path="", root=True)
    return schema


def _tighten(node: Any, *, path: str, root: bool = False) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item, path=path)
        return
    if not isinstance(node, dict):
        return
    if "patternProperties" in node:
        raise NotStrictable(f"{path or 'arguments'} has patternProperties (a free-form map)")
    kind = node.get("type")
    is_object = kind == "object" or (isinstance(kind, list) and "object" in kind)
    is_object = is_object or "properties" in node
    if is_object:
        properties = node.get("properties")
        extra = node.get("additionalProperties")
        if not properties and not root and extra is not False:
            raise NotStrictable(f"{path or 'arguments'} is a free-form object")
        if extra not in (None, False):
            raise NotStrictable(f"{path or 'arguments'} allows additional properties")
        properties = dict(properties or {})
        required = set(node.get("required") or [])
        for name, prop in properties.items():
            if name not in required:
                properties[name] = _nullable(prop)
        node["properties"] = properties
        node["required"] = list(properties)
        node["additionalProperties"] = False
    for key, value in node.items():
        if key in ("enum", "const", "default", "examples", "required"):
            continue
        if key == "properties" and is_object:
            for name, prop in value.items():
                _tighten(prop, path=f"{path}.{name}" if path else name)
            continue
        _tighten(value, path=path)


def _nullable(prop: Any) -> Any:
    if not isinstance(prop, dict):
        return prop
    prop = {k: v for k, v in prop.items() if k != "default"}
    kind = prop.get("type")
    if "enum" in prop and None not in prop["enum"]:
        prop["enum"] = [*prop["enum"], None]
    if isinstance(kind, str) and "const" not in prop:
        prop["type"] = [kind, "null"]
        return prop
    if isinstance(kind, list) and "const" not in prop:
        prop["type"] = kind if "null" in kind else [*kind, "null"]
        return prop
    return {"anyOf": [prop, {"type": "null"}]}


def _validator_class(schema: Mapping[str, Any]) -> type[Validator]:
    cls: type[Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return cls


class ArgumentChecker:
    """Validates arguments against the strict schema and turns them into the upstream call."""

    def __init__(self, tool: str, original: Mapping[str, Any], strict: Mapping[str, Any]) -> None:
        self.tool = tool
        self.original = dict(original)
        self.strict = dict(strict)
        self._validator = _validator_class(self.strict)(self.strict)

    def check(self, raw: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        """Strictly valid arguments, or :class:`InvalidArguments` naming the fields."""
        try:
            values = (
                json.loads(raw)
                if isinstance(raw, str | bytes)
                else json.loads(json.dumps(dict(raw), allow_nan=False))
            )
        except (TypeError, ValueError) as exc:
            raise InvalidArguments(f"arguments are not JSON: {exc}", tool=self.tool) from None
        if not isinstance(values, dict):
            raise InvalidArguments("arguments must be a JSON object", tool=self.tool)
        errors = [_error(e) for e in self._validator.iter_errors(values)][:MAX_ERRORS]
        if errors:
            raise InvalidArguments(
                "arguments do not match the tool's schema", tool=self.tool, errors=errors
            )
        canonical_json(values)  # refuses floats, lone surrogates: the digest must hold exactly
        return values

    def upstream_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """What the upstream receives: ``null`` for an optional property means "leave it out"."""
        stripped = _strip(self.original, values, self.original)
        assert isinstance(stripped, dict)
        return stripped


def _strip(schema: Any, value: Any, root: Mapping[str, Any]) -> Any:
    schema = _resolve(schema, root)
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required") or [])
        properties = schema["properties"]
        out = {}
        for name, item in value.items():
            if item is None and name not in required:
                continue
            out[name] = _strip(properties.get(name), item, root)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_strip(schema["items"], item, root) for item in value]
    return value


def _resolve(schema: Any, root: Mapping[str, Any]) -> Any:
    """A local ``$ref`` (``#/$defs/X``, ``#/definitions/X``); anything else as it is."""
    for _ in range(32):
        if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
            return schema
        ref: str = schema["$ref"]
        if not ref.startswith("#/"):
            return schema
        node: Any = root
        for part in ref[2:].split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        schema = node
    return schema


def _error(error: ValidationError) -> dict[str, Any]:
    """Field path and what is wrong, never the rejected value (it is the caller's data)."""
    loc = [str(part) for part in error.absolute_path]
    kind = str(error.validator)
    if kind in ("required", "additionalProperties"):
        message = error.message  # names the field, not a value
    elif kind in ("type", "enum", "const", "format", "pattern"):
        message = f"must match {kind} {json.dumps(error.validator_value, default=str)[:200]}"
    else:
        message = f"fails {kind} {json.dumps(error.validator_value, default=str)[:200]}"
    return {"loc": loc, "type": kind, "msg": message}
