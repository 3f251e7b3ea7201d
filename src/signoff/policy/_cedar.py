"""Conditions beyond thresholds, written in Cedar and evaluated by Cedar (``cedarpy``).

A rule's ``when`` is the body of a Cedar ``when { … }`` clause. Each becomes
one policy ``permit (principal, action == Signoff::Action::"propose",
resource) when { <when> };`` over this request:

    principal  Signoff::Principal::"<subject>"
    resource   Signoff::Tool::"<tool>"
    context    {args: the canonical arguments (nulls left out),
                principal: {subject, tenant, roles, is_agent, actor?, client?},
                risk: "low" | "medium" | "high" | "critical",
                tool: "<tool>", resource_id: "<resource the read step named>"}

Cedar allows the request (the condition holds) or does not. An evaluation
error is never taken for either: the proposal is refused
(``policy_undecidable``). ``signoff policy check`` validates each condition
against a Cedar schema made from the tool's argument schema, so a typo or an
optional argument read without ``has`` is found before it is deployed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import cedarpy

from signoff._model import Principal
from signoff.exceptions import PolicyUndecidable

NAMESPACE = "Signoff"
ACTION = f'{NAMESPACE}::Action::"propose"'
_SAFE_INT = 2**63 - 1


def cedar_policy(when: str) -> str:
    return f"permit (principal, action == {ACTION}, resource) when {{ {when} }};"


class Condition:
    """One rule's condition, parsed once by Cedar."""

    __slots__ = ("name", "policies", "policy", "text")

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.text = text
        self.policy = cedar_policy(text)
        try:
            self.policies = cedarpy.PolicySet.from_str(self.policy)
        except ValueError as exc:
            raise ValueError(f"Cedar does not parse it: {exc}") from None
        if len(self.policies) != 1:  # a `}` closing the clause early, then more
            raise ValueError("a condition is one Cedar expression, not a policy set")

    def holds(self, request: Mapping[str, Any]) -> bool:
        """Cedar's answer for ``request``; an evaluation error refuses the proposal."""
        result = cedarpy.is_authorized(dict(request), self.policies, [])
        errors = list(result.diagnostics.errors)
        if errors:
            raise PolicyUndecidable(
                f"the policy's rule {self.name!r} could not be evaluated: {errors[0]}",
                rule=self.name,
            )
        return result.allowed

    def __repr__(self) -> str:
        return f"Condition({self.name!r}, {self.text!r})"


def cedar_request(
    *,
    tool: str,
    arguments: Mapping[str, Any],
    principal: Principal,
    risk: str,
    resource_id: str,
) -> dict[str, Any]:
    """The request every condition of one proposal is asked about."""
    who: dict[str, Any] = {
        "subject": principal.subject,
        "tenant": principal.tenant,
        "roles": sorted(principal.roles),
        "is_agent": principal.is_agent,
    }
    if principal.actor is not None:
        who["actor"] = principal.actor
    if principal.client is not None:
        who["client"] = principal.client
    return {
        "principal": {"type": f"{NAMESPACE}::Principal", "id": principal.subject},
        "action": ACTION,
        "resource": {"type": f"{NAMESPACE}::Tool", "id": tool},
        "context": {
            "args": _cedar_value(dict(arguments)),
            "principal": who,
            "risk": risk,
            "tool": tool,
            "resource_id": resource_id,
        },
    }


def _cedar_value(value: Any) -> Any:
    """JSON as Cedar takes it: nulls (and floats, which Cedar lacks) left out."""
    if isinstance(value, dict):
        return {k: _cedar_value(v) for k, v in value.items() if v is not None and _representable(v)}
    if isinstance(value, list):
        return [_cedar_value(v) for v in value if v is not None and _representable(v)]
    return value


def _representable(value: Any) -> bool:
    if isinstance(value, float):
        return False
    return not (isinstance(value, int) and not isinstance(value, bool) and abs(value) > _SAFE_INT)


def cedar_schema(args_schema: Mapping[str, Any]) -> dict[str, Any]:
    """A Cedar schema (JSON form) for conditions on one tool, from its strict argument schema."""
    defs = args_schema.get("$defs", {})
    context = {
        "type": "Record",
        "attributes": {
            "args": _record(args_schema, defs),
            "principal": {
                "type": "Record",
                "attributes": {
                    "subject": {"type": "String"},
                    "tenant": {"type": "String"},
                    "roles": {"type": "Set", "element": {"type": "String"}},
                    "is_agent": {"type": "Boolean"},
                    "actor": {"type": "String", "required": False},
                    "client": {"type": "String", "required": False},
                },
            },
            "risk": {"type": "String"},
            "tool": {"type": "String"},
            "resource_id": {"type": "String"},
        },
    }
    return {
        NAMESPACE: {
            "entityTypes": {"Principal": {}, "Tool": {}},
            "actions": {
                "propose": {
                    "appliesTo": {
                        "principalTypes": ["Principal"],
                        "resourceTypes": ["Tool"],
                        "context": context,
                    }
                }
            },
        }
    }


def _record(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {}
    for name, prop in (node.get("properties") or {}).items():
        kind, nullable = _cedar_type(prop, defs)
        if kind is not None:
            attributes[name] = {**kind, "required": not nullable}
    return {"type": "Record", "attributes": attributes}


def _cedar_type(
    prop: Mapping[str, Any], defs: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, bool]:
    """(Cedar type, whether null is allowed); None for what Cedar cannot hold."""
    if "$ref" in prop:
        return _cedar_type(defs.get(str(prop["$ref"]).rsplit("/", 1)[-1], {}), defs)
    options = prop.get("anyOf")
    if isinstance(options, list):
        kinds = [_cedar_type(o, defs) for o in options if o.get("type") != "null"]
        nullable = any(o.get("type") == "null" for o in options)
        known = [k for k, _ in kinds if k is not None]
        return (known[0] if len(known) == 1 else None), nullable or any(n for _, n in kinds)
    kind = prop.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        inner, _ = _cedar_type({**prop, "type": rest[0]} if len(rest) == 1 else {}, defs)
        return inner, "null" in kind
    simple = {"integer": "Long", "string": "String", "boolean": "Boolean"}.get(str(kind))
    if simple is not None:
        return {"type": simple}, False
    if kind == "array":
        element, _ = _cedar_type(prop.get("items") or {}, defs)
        return (None if element is None else {"type": "Set", "element": element}), False
    if kind == "object" or "properties" in prop:
        return _record(prop, defs), False
    return None, False


def validate_condition(condition: Condition, schema: Mapping[str, Any]) -> list[str]:
    """Cedar's validator on one condition against a tool's schema: its errors, if any."""
    result = cedarpy.validate_policies(condition.policy, json.dumps(schema))
    return [error.error for error in result.errors]
