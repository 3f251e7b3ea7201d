"""RFC 8785 canonical JSON and the digests built on it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import rfc8785

from signoff.exceptions import InvalidArguments

JsonValue = Any
"""A value made only of dict, list, str, int, bool and None (floats are refused)."""


def canonical_json(value: JsonValue) -> bytes:
    """Return the RFC 8785 (JCS) serialization of ``value``.

    Key order never matters; any change of a value does. Floats are refused
    outright: signoff never lets a binary fraction stand for money or a count.
    """
    if _plain(value):
        # Same bytes as rfc8785 for these documents (tests/test_canonical_fast.py), in C.
        try:
            return _DUMPS(value).encode("utf-8")
        except UnicodeEncodeError:
            pass  # a lone surrogate: let rfc8785 refuse it with its own message
    _refuse_floats(value)
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise InvalidArguments(f"value cannot be canonicalized: {exc}") from exc


def canonical_flat(document: dict[str, str | int | None]) -> bytes:
    """:func:`canonical_json` of a flat document with ASCII keys (an audit event's fields):
    the same bytes, without walking it first when every value is a str, a safe int or None."""
    for value in document.values():
        if not (value is None or type(value) is str or _safe_int(value)):
            return canonical_json(document)
    try:
        return _DUMPS(document).encode("utf-8")
    except UnicodeEncodeError:
        return canonical_json(document)  # a lone surrogate: refused there, with its message


def _safe_int(value: object) -> bool:
    return type(value) is int and _INT_MIN <= value <= _INT_MAX


_INT_MIN = -(2**53) + 1
_INT_MAX = 2**53 - 1
_DUMPS = json.JSONEncoder(
    ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False
).encode


def _plain(value: JsonValue) -> bool:
    """True for documents whose JCS form ``json.dumps`` writes byte for byte.

    Exactly dict (ASCII keys: code-point order is then UTF-16 order), list,
    tuple, str, int within I-JSON's safe range, bool and None. JSON's string
    escapes with ``ensure_ascii=False`` are RFC 8785's: backslash, quote,
    b f n r t, and a lowercase u00xx for the other control characters.
    """
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is dict:
        return all(
            type(key) is str and key.isascii() and _plain(item) for key, item in value.items()
        )
    if kind is list or kind is tuple:
        return all(_plain(item) for item in value)
    return False


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def args_digest(tool: str, tool_version: str, args: Mapping[str, JsonValue]) -> str:
    """Hex SHA-256 of ``JCS({"tool", "tool_version", "args"})`` (PROTOCOL.md rule 3)."""
    return sha256_hex(canonical_json({"tool": tool, "tool_version": tool_version, "args": args}))


def resource_set_digest(resource_ids: list[str]) -> str:
    """Hex SHA-256 of the JCS form of the sorted resource ids of a batch."""
    return sha256_hex(canonical_json(sorted(resource_ids)))


def fingerprint(operation: str, fields: Mapping[str, JsonValue]) -> str:
    """Request fingerprint for idempotency keys: JCS, so no separator trick collides."""
    return sha256_hex(canonical_json({"operation": operation, "fields": fields}))


def _refuse_floats(value: JsonValue) -> None:
    if isinstance(value, float):
        raise InvalidArguments("floating-point numbers are not accepted; use integers")
    if isinstance(value, Mapping):
        for item in value.values():
            _refuse_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_floats(item)
