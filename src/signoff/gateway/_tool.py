"""An upstream write tool as a signoff ``WriteTool``: a proposal exactly like a native one.

The arguments are checked against the strict schema, canonicalised and bound
into the digest with the tool version (which carries the upstream, the tool and
its schema digest). The state the person confirms is the tool version itself:
if the upstream changes the schema, the state "moved" and the old proposal is
refused before its token is consumed. Execution calls the upstream once;
a lost answer is ``unknown`` and is never attempted again (``auto_retry`` off):
a lookup tool named in the policy, or a person, settles it.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, Protocol, cast

from signoff._model import Principal
from signoff.catalog._tool import StrictArgs, WriteTool
from signoff.catalog._types import (
    ApprovalPolicy,
    LookupOutcome,
    Preview,
    PreviewField,
    ProviderOutcome,
    ResourceState,
    Risk,
    RiskLevel,
    SideEffect,
    TerminalFailure,
)
from signoff.gateway._listed import ListedTool

_LEVELS = [RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL]
MAX_TITLE_VALUE = 80
_REVERSIBILITY = {
    SideEffect.NONE: "Changes nothing that matters.",
    SideEffect.REVERSIBLE: "Reversible: it can be undone.",
    SideEffect.IRREVERSIBLE: "Irreversible: signoff cannot undo it.",
    SideEffect.EXTERNAL: "Irreversible: it reaches outside (a message, a payment, a third party).",
}


class UpstreamArgs(StrictArgs):
    """Arguments checked against the upstream tool's strict JSON Schema (not a pydantic model)."""

    values: dict[str, Any]


class UpstreamCalls(Protocol):
    """What a write tool asks of the gateway: the one call, and the lookup after a lost answer."""

    def call_write(self, listed: ListedTool, values: dict[str, Any]) -> ProviderOutcome: ...

    def look_up(self, listed: ListedTool, request_key: str) -> LookupOutcome: ...


class UpstreamWriteTool(WriteTool[UpstreamArgs]):
    """Made per listed tool by :func:`write_tool`; the class attributes come from the policy."""

    auto_retry = False
    max_attempts = 3
    """Only after ``failed_retryable`` (the request never left signoff) is a call made again."""
    reject_reasons = ("wrong_target", "policy", "suspicious")

    def __init__(self, listed: ListedTool, calls: UpstreamCalls) -> None:
        self.listed = listed
        self.calls = calls

    def parse(self, raw: Any) -> UpstreamArgs:
        return UpstreamArgs(values=self.listed.arguments(raw))

    def load(self, canonical: Any) -> UpstreamArgs:
        """The stored canonical form, checked when proposed; a changed schema is caught by
        ``read_state`` (the version), so an old proposal is refused as ``state_changed``."""
        return UpstreamArgs(values=json.loads(json.dumps(dict(canonical))))

    def canonical(self, args: UpstreamArgs) -> dict[str, Any]:
        return dict(args.values)

    def read_state(self, args: UpstreamArgs, principal: Principal) -> ResourceState:
        listed = self.listed
        return ResourceState(
            resource_id=f"mcp:{listed.upstream}/{listed.name}",
            version=listed.digest,
            summary={
                "upstream": listed.upstream,
                "tool": listed.name,
                "schema_sha256": listed.digest[:16],
            },
        )

    def preview(self, args: UpstreamArgs, state: ResourceState) -> Preview:
        listed, policy = self.listed, self.listed.policy
        labels = policy.labels
        properties = listed.strict.get("properties", {})
        fields = tuple(
            PreviewField(
                name,
                labels.get(name) or _schema_title(properties.get(name)) or name,
                value,
                _display(value),
            )
            for name, value in args.values.items()
        )
        facts = [f"Tool version {listed.version}"]
        hint = listed.hint_text()
        if hint is not None:
            facts.append(hint)
        if not policy.listed:
            facts.append(
                "The policy does not list this tool, so it is treated as a write that needs "
                "approval (fail closed)."
            )
        return Preview(
            title=_title(policy.title, listed, args.values),
            description=listed.description,
            fields=fields,
            impact=policy.impact
            or f"Calls {listed.name} on the MCP server {listed.upstream} once, with these values.",
            reversibility=policy.reversibility or _REVERSIBILITY[self.side_effect],
            external_reach=f"the MCP server {listed.upstream}",
            facts=tuple(facts),
        )

    def risk(self, args: UpstreamArgs, state: ResourceState) -> Risk:
        policy = self.listed.policy
        level = policy.risk
        reasons = []
        for rule in policy.risk_rules:
            if rule.applies(args.values):
                reasons.append(rule.reason)
                level = max(level, rule.level, key=_LEVELS.index)
        if not policy.listed:
            reasons.append("not listed in the policy")
        return Risk(level, tuple(reasons))

    def policy(self, args: UpstreamArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        policy = self.listed.policy
        approvals = max(
            [policy.approvals]
            + [r.approvals for r in policy.risk_rules if r.approvals and r.applies(args.values)]
        )
        return ApprovalPolicy(
            role=policy.approver_role,
            requester_confirms=policy.requester_confirms,
            approvals=approvals,
            retype=policy.retype,
            in_band=policy.in_band,
            version=policy.version,
        )

    def execute(
        self, args: UpstreamArgs, request_key: str, expected: ResourceState
    ) -> ProviderOutcome:
        if expected.version != self.listed.digest:
            return TerminalFailure(
                "the upstream tool's schema changed since the approval; nothing was sent",
                code="state_changed",
            )
        return self.calls.call_write(self.listed, dict(args.values))

    def lookup(self, request_key: str) -> LookupOutcome:
        return self.calls.look_up(self.listed, request_key)


def write_tool(listed: ListedTool, calls: UpstreamCalls) -> UpstreamWriteTool:
    """A tool class of its own per listed tool: the gate reads name, version and the rest
    from the class, as it does for a native tool."""
    policy = listed.policy
    cls = type(
        f"UpstreamWriteTool_{listed.exposed}",
        (UpstreamWriteTool,),
        {
            "name": listed.exposed,
            "version": listed.version,
            "description": listed.description,
            "side_effect": policy.side_effect,
            "ttl": timedelta(seconds=policy.ttl_seconds),
            "args_model": UpstreamArgs,
            # No lookup tool: the first inconclusive lookup hands it to a person.
            "max_lookups": 3 if policy.lookup is not None else 1,
            "in_band": policy.in_band,
        },
    )
    return cast(type[UpstreamWriteTool], cls)(listed, calls)


def _schema_title(schema: Any) -> str | None:
    if isinstance(schema, dict):
        title = schema.get("title")
        if isinstance(title, str) and title.strip():
            return title
        for option in schema.get("anyOf", ()):
            found = _schema_title(option)
            if found:
                return found
    return None


def _display(value: Any) -> str:
    if value is None:
        return "— (left out: the server's default)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _title(template: str | None, listed: ListedTool, values: dict[str, Any]) -> str:
    default = f"{listed.title or listed.name} on {listed.upstream}"
    if template is None:
        return default
    shown = {k: _display(v)[:MAX_TITLE_VALUE] for k, v in values.items()}
    try:
        return template.format_map(shown)
    except (KeyError, ValueError, IndexError, AttributeError):
        return default
