"""File keys onto :class:`~signoff.ApprovalPolicy` fields, generically.

Every field of ``ApprovalPolicy`` (but ``version``, which is now the digest of
the effective policy) is a key of the same name in the policy file, coerced
by the field's annotation: a new field needs no line here unless its type is
not one of those below (then one entry in ``COERCE``) or it needs a check of
its own (one entry in ``CHECKS``).
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import re
import typing
from collections.abc import Callable
from typing import Any

from signoff.catalog._types import ApprovalPolicy

ROLE = re.compile(r"^[A-Za-z][A-Za-z0-9_.:-]{0,63}$")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
Coerce = Callable[[Any], Any]


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be an integer")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("must be text")
    return value


def _optional_str(value: Any) -> str | None:
    """Text; the empty text means none (TOML has no null)."""
    return _str(value) or None


def _optional_int(value: Any) -> int | None:
    return _int(value)


def _names(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of text values")
    return tuple(value)


COERCE: dict[Any, Coerce] = {
    bool: _bool,
    int: _int,
    str: _str,
    str | None: _optional_str,
    int | None: _optional_int,
    tuple[str, ...]: _names,
}
"""Annotation → how a TOML value becomes the field's value."""


def _role(value: Any) -> None:
    if value is not None and not ROLE.match(value):
        raise ValueError("a role name is a letter then letters, digits, _ . : or - (≤ 64)")


def _approvals(value: Any) -> None:
    if not 1 <= value <= 20:
        raise ValueError("approvals is between 1 and 20")


def _surfaces(value: Any) -> None:
    bad = [v for v in value if not NAME.match(v)]
    if bad:
        raise ValueError(f"surface names are page, api, mcp or client ids; not {bad}")


def _device(value: Any) -> None:
    if value not in ("none", "required", "or_retype"):
        raise ValueError("device is none, required or or_retype")


CHECKS: dict[str, Callable[[Any], None]] = {
    "role": _role,
    "approvals": _approvals,
    "surfaces": _surfaces,
    "device": _device,
}
"""Field name → an extra check of the coerced value (a ValueError says what is wrong)."""


@functools.cache
def approval_fields() -> dict[str, Coerce]:
    """``ApprovalPolicy``'s fields a file may set, with their coercion (read once)."""
    hints = typing.get_type_hints(ApprovalPolicy)
    fields: dict[str, Coerce] = {}
    for field in dataclasses.fields(ApprovalPolicy):
        if field.name == "version":
            continue
        hint = hints[field.name]
        coerce = COERCE.get(hint) or COERCE.get(_normalized(hint))
        if coerce is None:
            raise TypeError(
                f"ApprovalPolicy.{field.name}: add its type {hint!r} to "
                "signoff.policy._fields.COERCE"
            )
        fields[field.name] = coerce
    return fields


def _normalized(hint: Any) -> Any:
    """``Optional[str]`` and ``str | None`` are one key of ``COERCE``."""
    if typing.get_origin(hint) is typing.Union:
        return functools.reduce(operator.or_, typing.get_args(hint))
    return hint


def coerce_field(name: str, value: Any, fields: dict[str, Coerce]) -> Any:
    """The field's value from the file's, or a ValueError saying what the key accepts."""
    coerced = fields[name](value)
    check = CHECKS.get(name)
    if check is not None:
        check(coerced)
    return coerced
