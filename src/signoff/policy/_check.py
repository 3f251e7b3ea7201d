"""``signoff policy check``: a parsed file against the catalog it will govern.

Unknown tools, threshold names a tool never reads, re-typed fields that are
not arguments, Cedar conditions that do not validate against the tool's
argument schema, and settings that leave a tool with no valid approver. The
``[upstreams.*]`` tables belong to the MCP gateway: ``sections`` maps a
top-level table to the checker that owns it (the gateway registers its own);
without one they are accepted as they are.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from signoff._model import Principal
from signoff.catalog._catalog import Catalog
from signoff.catalog._tool import WriteTool
from signoff.catalog._types import ApprovalPolicy, RiskLevel
from signoff.exceptions import SignoffError
from signoff.policy._cedar import cedar_schema, validate_condition
from signoff.policy._effective import effective_policy, mandate_policy
from signoff.policy._file import Layer, PolicyFile
from signoff.policy._problems import Problem

SectionCheck = Callable[[Mapping[str, Any]], list[Problem]]
"""Checks one top-level table the policy module does not interpret (``upstreams``)."""


def accept_as_is(section: Mapping[str, Any]) -> list[Problem]:
    return []


DEFAULT_SECTIONS: Mapping[str, SectionCheck] = {"upstreams": accept_as_is}
"""The hook: the MCP gateway puts its parser here to have ``policy check`` validate
``[upstreams.*]`` (issue 26)."""


def check_policy(
    policy: PolicyFile,
    catalog: Catalog,
    *,
    sections: Mapping[str, SectionCheck] = DEFAULT_SECTIONS,
) -> list[Problem]:
    """Every problem of ``policy`` for ``catalog``; empty when it may be applied."""
    problems: list[Problem] = []
    known = {tool.name for tool in catalog}
    for name in sorted(policy.tool_names() - known):
        where = next(
            (layer.where for (t, n), layer in policy.tenant_tools.items() if n == name),
            f"tools.{name}",
        )
        if name in policy.tools:
            where = f"tools.{name}"
        problems.append(
            Problem(
                "unknown_tool", where, f"no tool named {name!r} in the catalog ({_names(known)})"
            )
        )
    for tool in catalog:
        problems += _check_tool(policy, tool, catalog.schema(tool.name))
    for name, check in sections.items():
        section = policy.upstreams if name == "upstreams" else policy.document.get(name) or {}
        problems += check(section)
    return problems


def _names(known: set[str]) -> str:
    return ", ".join(sorted(known)) or "empty"


def _layers_of(policy: PolicyFile, tool: str) -> list[Layer]:
    return [
        policy.defaults,
        *([policy.tools[tool]] if tool in policy.tools else []),
        *policy.tenant_defaults.values(),
        *(layer for (_, name), layer in policy.tenant_tools.items() if name == tool),
    ]


def _check_tool(
    policy: PolicyFile, tool: WriteTool[Any], args_schema: dict[str, Any]
) -> list[Problem]:
    problems: list[Problem] = []
    schema = cedar_schema(args_schema)
    arguments = set(tool.args_model.model_fields)
    for layer in _layers_of(policy, tool.name):
        own = layer is policy.tools.get(tool.name) or layer.where.endswith(f".tools.{tool.name}")
        for name, value in layer.thresholds.items():
            place = f"{layer.where}.thresholds.{name}"
            if name not in tool.thresholds:
                if own:
                    declared = ", ".join(sorted(tool.thresholds)) or "none"
                    problems.append(
                        Problem(
                            "unknown_threshold",
                            place,
                            f"{tool.name} reads no such threshold (it reads: {declared})",
                        )
                    )
            elif type(value) is not type(tool.thresholds[name]):
                kind = type(tool.thresholds[name]).__name__
                problems.append(Problem("invalid_value", place, f"{tool.name} reads it as {kind}"))
        for values, where in _value_sets(layer):
            unknown = [f for f in values.get("retype", ()) if f not in arguments]
            if unknown:
                problems.append(
                    Problem(
                        "invalid_value",
                        f"{where}.retype",
                        f"{tool.name} has no arguments {unknown}",
                    )
                )
        for rule in layer.rules:
            for error in validate_condition(rule.condition, schema):
                problems.append(
                    Problem(
                        "cedar_invalid",
                        f"{layer.where}.rules {rule.name!r}",
                        f"for {tool.name}: {error}",
                    )
                )
    problems += _check_combinations(policy, tool)
    return problems


def _value_sets(layer: Layer) -> list[tuple[Mapping[str, Any], str]]:
    sets: list[tuple[Mapping[str, Any], str]] = [(layer.values, layer.where)]
    sets += [(values, f"{layer.where}.risk.{level}") for level, values in layer.risk.items()]
    sets += [(rule.values, f"{layer.where}.rules {rule.name!r}") for rule in layer.rules]
    return sets


def _check_combinations(policy: PolicyFile, tool: WriteTool[Any]) -> list[Problem]:
    """Each tenant and risk level leaves the tool a valid approver (rules left out)."""
    problems: list[Problem] = []
    base = _declared(tool)
    tenants = sorted({"*", *policy.tenant_defaults, *(t for t, _ in policy.tenant_tools)})
    unruled = _without_rules(policy)
    for tenant in tenants:
        principal = Principal("policy-check", tenant)
        for level in RiskLevel:
            try:
                effective_policy(
                    unruled, tool, principal, base, level, arguments={}, resource_id=""
                )
            except SignoffError as exc:
                where = (
                    f"tools.{tool.name}" if tenant == "*" else f"tenants.{tenant}.tools.{tool.name}"
                )
                problems.append(
                    Problem("invalid_value", f"{where} (risk {level.value})", exc.message)
                )
                break
        if tool.mandates or any(
            layer.values.get("mandates") for layer in policy.layers(tool.name, tenant)
        ):
            try:
                mandate_policy(unruled, tool, tenant)
            except SignoffError as exc:
                problems.append(Problem("invalid_value", f"tools.{tool.name}.mandate", exc.message))
    return problems


def _declared(tool: WriteTool[Any]) -> ApprovalPolicy:
    try:
        return ApprovalPolicy(
            role=tool.approver_role,
            requester_confirms=tool.requester_confirms,
            approvals=tool.approvals,
        )
    except ValueError:
        return ApprovalPolicy(requester_confirms=True)  # policy() decides at run time


def _without_rules(policy: PolicyFile) -> PolicyFile:
    import dataclasses

    def strip(layer: Layer) -> Layer:
        return dataclasses.replace(layer, rules=())

    return dataclasses.replace(
        policy,
        defaults=strip(policy.defaults),
        tools={k: strip(v) for k, v in policy.tools.items()},
        tenant_defaults={k: strip(v) for k, v in policy.tenant_defaults.items()},
        tenant_tools={k: strip(v) for k, v in policy.tenant_tools.items()},
    )
