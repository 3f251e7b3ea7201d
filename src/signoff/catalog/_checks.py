"""What registration checks about a tool, so a declaration bug never reaches a person.

Each check raises a one-line :class:`CatalogError` naming the tool and what to
write instead. A hook that the gate would call with the wrong number of
arguments is found here, not after a person's confirmation was consumed.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pydantic

from signoff.catalog._schema import strict_json_schema
from signoff.catalog._tool import StrictArgs, WriteTool, _args_model_of
from signoff.catalog._types import (
    ApprovalPolicy,
    Clarification,
    NotFoundAtProvider,
    Pending,
    Preview,
    ResourceState,
    RetryableFailure,
    Risk,
    SideEffect,
    Succeeded,
    TerminalFailure,
)
from signoff.exceptions import CatalogError

_REASON_CODE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
# The hooks whose answer the gate records as the outcome of a write: an unannotated one is
# how a bare value (a string instead of Succeeded(...)) reaches the gate after the effect.
ANNOTATION_REQUIRED = ("execute", "lookup")
# hook → (its parameters after self, the types its return annotation may name)
HOOKS: dict[str, tuple[tuple[str, ...], tuple[type, ...]]] = {
    "normalize": (("args", "principal"), (StrictArgs, Clarification)),
    "read_state": (("args", "principal"), (ResourceState,)),
    "preview": (("args", "state"), (Preview,)),
    "risk": (("args", "state"), (Risk,)),
    "policy": (("args", "state", "risk"), (ApprovalPolicy,)),
    "execute": (
        ("args", "request_key", "expected"),
        (Succeeded, RetryableFailure, TerminalFailure),
    ),
    "lookup": (("request_key",), (Succeeded, TerminalFailure, Pending, NotFoundAtProvider)),
}


RESERVED_PREFIX = "signoff_"
"""Argument names the agent request tools keep for themselves (``signoff_mandate_id``,
``signoff_supersedes``): a tool may not declare one."""


def check_tool(tool: WriteTool[Any]) -> dict[str, Any]:
    """Refuse a wrongly declared tool; return its strict argument schema."""
    name = getattr(tool, "name", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise CatalogError(f"tool name must be an identifier, got {name!r}")
    if not isinstance(getattr(tool, "side_effect", None), SideEffect):
        raise CatalogError(f"tool {name!r} must declare side_effect = SideEffect.…")
    description = getattr(tool, "description", None)
    if not isinstance(description, str) or not description.strip():
        raise CatalogError(f"tool {name!r} must declare a description (one sentence)")
    ttl = getattr(tool, "ttl", None)
    if not isinstance(ttl, timedelta) or ttl <= timedelta(0):
        raise CatalogError(f"tool {name!r}: ttl must be a positive timedelta")
    schema = _check_args_model(tool, name)
    for hook in HOOKS:
        _check_hook(tool, name, hook)
    _check_approvers(tool, name)
    _check_reasons(tool, name)
    _check_mandate_arguments(tool, name)
    _check_thresholds(tool, name)
    return schema


def _check_args_model(tool: WriteTool[Any], name: str) -> dict[str, Any]:
    model = getattr(tool, "args_model", None)
    if not (isinstance(model, type) and issubclass(model, pydantic.BaseModel)):
        raise CatalogError(
            f"tool {name!r} has no arguments model: declare it as WriteTool[YourArgs]"
        )
    declared = _args_model_of(type(tool))
    if declared is not None and declared is not model:
        raise CatalogError(
            f"tool {name!r}: args_model is {model.__name__} but the class says "
            f"WriteTool[{declared.__name__}]; drop args_model"
        )
    if not issubclass(model, StrictArgs):
        raise CatalogError(f"tool {name!r}: {model.__name__} must subclass signoff.StrictArgs")
    for nested in _models_in(model):
        config = nested.model_config
        if config.get("extra") != "forbid" or (nested is model and not config.get("strict")):
            raise CatalogError(
                f"tool {name!r}: {nested.__name__} is not strict (unknown fields or loose "
                "types would pass); subclass signoff.StrictArgs and keep its model_config"
            )
    reserved = sorted(f for f in model.model_fields if f.startswith(RESERVED_PREFIX))
    if reserved:
        raise CatalogError(
            f"tool {name!r}: argument names starting with {RESERVED_PREFIX!r} are reserved for "
            f"the agent request tools ({', '.join(reserved)}); rename them"
        )
    try:
        return strict_json_schema(model)
    except CatalogError as exc:
        raise CatalogError(f"tool {name!r}: {exc.message}") from None


def _models_in(model: type[pydantic.BaseModel]) -> Iterator[type[pydantic.BaseModel]]:
    """The model and every model nested in its fields' types."""
    seen: set[type] = set()
    todo: list[Any] = [model]
    while todo:
        item = todo.pop()
        if isinstance(item, type) and issubclass(item, pydantic.BaseModel):
            if item in seen:
                continue
            seen.add(item)
            yield item
            todo.extend(f.annotation for f in item.model_fields.values())
        else:
            todo.extend(typing.get_args(item))


def _check_hook(tool: WriteTool[Any], name: str, hook: str) -> None:
    params, allowed = HOOKS[hook]
    method = getattr(tool, hook, None)
    wanted = f"{hook}(self, {', '.join(params)})"
    if not callable(method):
        raise CatalogError(f"tool {name!r}: {hook} must be a method {wanted}")
    signature = inspect.signature(method)
    try:
        signature.bind(*params)
    except TypeError:
        theirs = ", ".join(["self", *(_param(p) for p in signature.parameters.values())])
        raise CatalogError(
            f"tool {name!r}: {hook} must take {wanted}, not {hook}({theirs})"
        ) from None
    function = getattr(type(tool), hook, None)
    if hook in ANNOTATION_REQUIRED and not _has_return_annotation(function):
        names = " | ".join(t.__name__ for t in allowed)
        raise CatalogError(
            f"tool {name!r}: {hook} has no return annotation; write "
            f"def {hook}(self, {', '.join(params)}) -> {names}"
        )
    returned = _return_types(function)
    wrong = [t for t in returned if not (isinstance(t, type) and issubclass(t, allowed))]
    if wrong:
        names = " | ".join(t.__name__ for t in allowed)
        raise CatalogError(
            f"tool {name!r}: {hook} is annotated to return {_names(wrong)}; it must return {names}"
        )


def _param(parameter: inspect.Parameter) -> str:
    if parameter.kind is inspect.Parameter.VAR_POSITIONAL:
        return f"*{parameter.name}"
    if parameter.kind is inspect.Parameter.VAR_KEYWORD:
        return f"**{parameter.name}"
    return parameter.name


def _has_return_annotation(function: Callable[..., Any] | None) -> bool:
    return "return" in getattr(function, "__annotations__", {})


def _return_types(function: Callable[..., Any] | None) -> list[Any]:
    """The types a return annotation names; empty when absent or not resolvable here."""
    annotation = getattr(function, "__annotations__", {}).get("return", inspect.Parameter.empty)
    if isinstance(annotation, str):
        namespace = {**vars(typing), **getattr(function, "__globals__", {})}
        try:
            annotation = eval(annotation, namespace)  # noqa: S307 - the tool's own annotation
        except Exception:  # a name only imported for type checkers: cannot tell, accept
            return []
    if annotation in (inspect.Parameter.empty, Any, typing.NoReturn, typing.Never):
        return []
    if annotation is None:
        return [type(None)]
    if isinstance(annotation, typing.TypeVar):
        return []
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for member in typing.get_args(annotation) for t in _flatten(member)]
    return _flatten(annotation)


def _flatten(annotation: Any) -> list[Any]:
    if isinstance(annotation, typing.TypeVar) or annotation is Any:
        return []
    if annotation is None:
        return [type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [t for member in typing.get_args(annotation) for t in _flatten(member)]
    return [annotation]


def _names(annotations: list[Any]) -> str:
    return " | ".join(getattr(a, "__name__", repr(a)) for a in annotations)


def _check_approvers(tool: WriteTool[Any], name: str) -> None:
    """Who approves must be declared: a role, the requester, or a policy() of its own."""
    if type(tool).policy is not WriteTool.policy:
        return
    if tool.approver_role is None and not tool.requester_confirms:
        raise CatalogError(
            f"tool {name!r} names no approver: set approver_role = '…' "
            "(or requester_confirms = True), or define policy()"
        )
    try:
        ApprovalPolicy(
            role=tool.approver_role,
            requester_confirms=tool.requester_confirms,
            approvals=tool.approvals,
        )
    except ValueError as exc:
        raise CatalogError(f"tool {name!r}: {exc}") from None
    unknown = [f for f in tool.retype if f not in tool.args_model.model_fields]
    if unknown:
        raise CatalogError(f"tool {name!r}: retype names {unknown}, which are not arguments")


def _check_reasons(tool: WriteTool[Any], name: str) -> None:
    codes = tool.reject_reasons
    if not isinstance(codes, tuple | list) or not all(isinstance(c, str) for c in codes):
        raise CatalogError(f"tool {name!r}: reject_reasons is a tuple of codes, e.g. ('policy',)")
    for code in tool.reasons():
        if not _REASON_CODE.match(code):
            raise CatalogError(
                f"tool {name!r}: reject reason {code!r} must be lower_snake_case, ≤ 40 characters"
            )


def _check_mandate_arguments(tool: WriteTool[Any], name: str) -> None:
    """``amount_argument`` names an integer argument, ``currency_argument`` a text one."""
    fields = tool.args_model.model_fields
    for attribute, wanted in (("amount_argument", int), ("currency_argument", str)):
        argument = getattr(tool, attribute)
        if argument is None:
            continue
        field = fields.get(argument)
        if field is None or wanted not in _flatten(field.annotation):
            raise CatalogError(
                f"tool {name!r}: {attribute} = {argument!r} must name an argument of type "
                f"{wanted.__name__}"
            )
    if (tool.amount_argument is None) != (tool.currency_argument is None):
        raise CatalogError(f"tool {name!r}: declare amount_argument and currency_argument together")


def _check_thresholds(tool: WriteTool[Any], name: str) -> None:
    for key, value in dict(tool.thresholds).items():
        valid = isinstance(value, int | str) and not isinstance(value, bool)
        if not (isinstance(key, str) and _REASON_CODE.match(key) and valid):
            raise CatalogError(
                f"tool {name!r}: thresholds maps lower_snake_case names to integers or text"
            )
