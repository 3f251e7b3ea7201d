"""The policy file: TOML in, a checked :class:`PolicyFile` out (docs/POLICIES.md).

    [defaults]                         every tool, every tenant
    [defaults.expiry]                  low/medium/high/critical → a duration
    [tools.refund_order]               one tool (overrides its Python ApprovalPolicy)
    [tools.refund_order.risk.high]     that tool at one risk level
    [tools.refund_order.thresholds]    what the tool's risk() reads
    [tools.refund_order.escalation]    reminders and escalation (carried; timers later)
    [tools.refund_order.mandate]       how a standing approval of the tool is approved
    [[tools.refund_order.rules]]       when = a Cedar condition; the keys it sets
    [tenants.acme.defaults]            one tenant, every tool
    [tenants.acme.tools.refund_order]  one tenant, one tool
    [upstreams.*]                      the MCP gateway's; carried, checked by its own parser

Later layers win: defaults, the tool, the tenant's defaults, the tenant's tool;
within each, its risk level; then every matching rule in file order.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signoff._canonical import canonical_json
from signoff.catalog._types import RiskLevel
from signoff.exceptions import InvalidArguments
from signoff.policy._cedar import Condition
from signoff.policy._duration import parse_duration
from signoff.policy._fields import ROLE, Coerce, approval_fields, coerce_field
from signoff.policy._problems import Problem, refuse

LEVELS = tuple(level.value for level in RiskLevel)
EVIDENCE = ("idp", "device", "any")
CARRIED = ("evidence", "expiry", "mandates", "mandate_fallback")
"""Keys that are not ApprovalPolicy fields (yet): carried in the effective policy."""
TABLES = ("risk", "rules", "thresholds", "escalation", "mandate")
MANDATE_KEYS = ("max_ttl", "covers_risk")
ESCALATION_KEYS = ("remind_after", "escalate_after", "targets")
TOP_LEVEL = ("defaults", "tools", "tenants", "upstreams")


@dataclass(frozen=True, slots=True)
class Rule:
    """``[[….rules]]``: when the Cedar condition holds, these settings apply."""

    name: str
    condition: Condition
    values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Layer:
    """One section's settings, already coerced and checked."""

    where: str
    values: Mapping[str, Any] = field(default_factory=dict)
    risk: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    thresholds: Mapping[str, Any] = field(default_factory=dict)
    escalation: Mapping[str, Any] = field(default_factory=dict)
    mandate: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PolicyFile:
    """A parsed policy file; ``digest`` is sha256 of its JCS form (what ``apply`` records)."""

    digest: str
    document: Mapping[str, Any]
    defaults: Layer
    tools: Mapping[str, Layer]
    tenant_defaults: Mapping[str, Layer]
    tenant_tools: Mapping[tuple[str, str], Layer]
    upstreams: Mapping[str, Any]
    source: str = "<policy>"

    def layers(self, tool: str, tenant: str) -> list[Layer]:
        """The layers that apply to ``tool`` in ``tenant``, weakest first."""
        found = [self.defaults, self.tools.get(tool), self.tenant_defaults.get(tenant)]
        found.append(self.tenant_tools.get((tenant, tool)))
        return [layer for layer in found if layer is not None]

    def tool_names(self) -> set[str]:
        return set(self.tools) | {tool for _, tool in self.tenant_tools}


def load_policy_file(path: str | Path) -> PolicyFile:
    """Read and parse ``path``; a :class:`~signoff.exceptions.PolicyFileError` lists problems."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        problem = Problem("policy_unreadable", source, exc.strerror or str(exc))
        raise refuse([problem], source) from None
    return parse_policy(text, source=source)


def parse_policy(text: str, *, source: str = "<policy>") -> PolicyFile:
    policy, problems = parse_with_problems(text, source=source)
    if problems or policy is None:
        raise refuse(problems, source)
    return policy


def parse_with_problems(
    text: str, *, source: str = "<policy>"
) -> tuple[PolicyFile | None, list[Problem]]:
    """The file and every problem found in it (the catalog is checked separately)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return None, [Problem("policy_syntax", source, f"not valid TOML: {exc}")]
    try:
        digest = hashlib.sha256(canonical_json(document)).hexdigest()
    except InvalidArguments:
        return None, [
            Problem("invalid_value", source, "floats and dates are not allowed; use integers")
        ]
    problems: list[Problem] = []
    parser = _Parser(problems)
    for key in document:
        if key not in TOP_LEVEL:
            problems.append(
                Problem("unknown_section", key, f"expected one of {', '.join(TOP_LEVEL)}")
            )
    defaults = parser.layer(_table(document.get("defaults"), "defaults", problems), "defaults")
    tools = {
        name: parser.layer(table, f"tools.{name}")
        for name, table in _tables(document.get("tools"), "tools", problems).items()
    }
    tenant_defaults: dict[str, Layer] = {}
    tenant_tools: dict[tuple[str, str], Layer] = {}
    for tenant, table in _tables(document.get("tenants"), "tenants", problems).items():
        where = f"tenants.{tenant}"
        for key in table:
            if key not in ("defaults", "tools"):
                problems.append(
                    Problem("unknown_section", f"{where}.{key}", "expected defaults or tools")
                )
        tenant_defaults[tenant] = parser.layer(
            _table(table.get("defaults"), f"{where}.defaults", problems), f"{where}.defaults"
        )
        for name, tool_table in _tables(table.get("tools"), f"{where}.tools", problems).items():
            tenant_tools[(tenant, name)] = parser.layer(tool_table, f"{where}.tools.{name}")
    upstreams = _table(document.get("upstreams"), "upstreams", problems)
    policy = PolicyFile(
        digest=digest,
        document=document,
        defaults=defaults,
        tools=tools,
        tenant_defaults=tenant_defaults,
        tenant_tools=tenant_tools,
        upstreams=upstreams,
        source=source,
    )
    return policy, problems


def _table(value: Any, where: str, problems: list[Problem]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(Problem("invalid_value", where, "must be a table"))
        return {}
    return value


def _tables(value: Any, where: str, problems: list[Problem]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for name, table in _table(value, where, problems).items():
        if isinstance(table, dict):
            found[name] = table
        else:
            problems.append(Problem("invalid_value", f"{where}.{name}", "must be a table"))
    return found


class _Parser:
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        self.fields: dict[str, Coerce] = approval_fields()

    def fail(self, code: str, where: str, message: str) -> None:
        self.problems.append(Problem(code, where, message))

    def layer(self, table: Mapping[str, Any], where: str) -> Layer:
        values = self.values(table, where, allow=TABLES)
        risk: dict[str, Mapping[str, Any]] = {}
        for level, sub in _tables(table.get("risk"), f"{where}.risk", self.problems).items():
            if level not in LEVELS:
                self.fail(
                    "invalid_value", f"{where}.risk.{level}", f"risk levels are {', '.join(LEVELS)}"
                )
                continue
            risk[level] = self.values(sub, f"{where}.risk.{level}", allow=())
        return Layer(
            where=where,
            values=values,
            risk=risk,
            rules=self.rules(table.get("rules"), f"{where}.rules"),
            thresholds=self.thresholds(table.get("thresholds"), f"{where}.thresholds"),
            escalation=self.escalation(table.get("escalation"), f"{where}.escalation"),
            mandate=self.mandate(table.get("mandate"), f"{where}.mandate"),
        )

    def values(
        self, table: Mapping[str, Any], where: str, *, allow: tuple[str, ...]
    ) -> dict[str, Any]:
        """The section's own settings: ApprovalPolicy fields and the carried keys."""
        values: dict[str, Any] = {}
        for key, value in table.items():
            place = f"{where}.{key}"
            if key in allow:
                continue
            try:
                if key in self.fields:
                    values[key] = coerce_field(key, value, self.fields)
                elif key in CARRIED:
                    values[key] = self.carried(key, value)
                else:
                    self.fail("unknown_field", place, self.unknown_hint(allow))
            except ValueError as exc:
                self.fail("invalid_value", place, str(exc))
        return values

    def unknown_hint(self, allow: tuple[str, ...]) -> str:
        keys = sorted([*self.fields, *CARRIED, *allow])
        return f"not a policy setting; known: {', '.join(keys)}"

    def carried(self, key: str, value: Any) -> Any:
        if key in ("mandates", "mandate_fallback"):
            if not isinstance(value, bool):
                raise ValueError("must be true or false")
            return value
        if key == "evidence":
            if value not in EVIDENCE:
                raise ValueError(f"evidence is {', '.join(EVIDENCE)}")
            return value
        # expiry: one duration for every level, or a table by level
        if isinstance(value, dict):
            unknown = [level for level in value if level not in LEVELS]
            if unknown:
                raise ValueError(f"expiry levels are {', '.join(LEVELS)}; not {unknown}")
            return {level: parse_duration(seconds) for level, seconds in value.items()}
        seconds = parse_duration(value)
        return dict.fromkeys(LEVELS, seconds)

    def rules(self, value: Any, where: str) -> tuple[Rule, ...]:
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
            self.fail("invalid_value", where, "rules is an array of tables: [[….rules]]")
            return ()
        rules = []
        for index, table in enumerate(value):
            place = f"{where}[{index}]"
            name = table.get("name", f"rule {index + 1}")
            when = table.get("when")
            if not isinstance(name, str) or not isinstance(when, str) or not when.strip():
                self.fail(
                    "invalid_value",
                    place,
                    "a rule needs `when` (a Cedar condition) and an optional `name`",
                )
                continue
            try:
                condition = Condition(name, when)
            except ValueError as exc:
                self.fail("cedar_invalid", f"{place}.when", str(exc))
                continue
            settings = {k: v for k, v in table.items() if k not in ("name", "when")}
            rules.append(Rule(name, condition, self.values(settings, place, allow=())))
        return tuple(rules)

    def thresholds(self, value: Any, where: str) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name, threshold in _table(value, where, self.problems).items():
            if isinstance(threshold, bool) or not isinstance(threshold, int | str):
                self.fail("invalid_value", f"{where}.{name}", "a threshold is an integer or text")
                continue
            found[name] = threshold
        return found

    def escalation(self, value: Any, where: str) -> dict[str, Any]:
        table = _table(value, where, self.problems)
        found: dict[str, Any] = {}
        for key, item in table.items():
            place = f"{where}.{key}"
            try:
                if key == "remind_after":
                    items = item if isinstance(item, list) else [item]
                    found[key] = sorted(parse_duration(i) for i in items)
                elif key == "escalate_after":
                    found[key] = parse_duration(item)
                elif key == "targets":
                    found[key] = _targets(item)
                else:
                    self.fail(
                        "unknown_field", place, f"escalation keys are {', '.join(ESCALATION_KEYS)}"
                    )
            except ValueError as exc:
                self.fail("invalid_value", place, str(exc))
        reminders = found.get("remind_after") or []
        if reminders and "escalate_after" in found and found["escalate_after"] <= reminders[-1]:
            self.fail(
                "invalid_value", f"{where}.escalate_after", "escalate after the last reminder"
            )
        if "escalate_after" in found and not found.get("targets"):
            self.fail("invalid_value", f"{where}.targets", "escalation needs targets")
        return found

    def mandate(self, value: Any, where: str) -> dict[str, Any]:
        table = _table(value, where, self.problems)
        own = {k: v for k, v in table.items() if k in MANDATE_KEYS}
        found = self.values(
            {k: v for k, v in table.items() if k not in MANDATE_KEYS}, where, allow=()
        )
        for key in ("expiry", "mandates", "mandate_fallback", "retype", "in_band"):
            if key in found:
                found.pop(key)
                self.fail(
                    "unknown_field", f"{where}.{key}", "not a setting of a mandate's approval"
                )
        for key, item in own.items():
            place = f"{where}.{key}"
            try:
                if key == "max_ttl":
                    found[key] = parse_duration(item)
                elif not isinstance(item, list) or any(level not in LEVELS for level in item):
                    raise ValueError(f"covers_risk lists risk levels: {', '.join(LEVELS)}")
                else:
                    found[key] = sorted(set(item), key=LEVELS.index)
            except ValueError as exc:
                self.fail("invalid_value", place, str(exc))
        return found


def _targets(value: Any) -> list[str]:
    """``role:<role>`` or ``person:<subject>`` entries."""
    if not isinstance(value, list) or not value:
        raise ValueError('targets is a list such as ["role:finance_lead", "person:carol"]')
    for target in value:
        kind, _, name = str(target).partition(":")
        if kind == "role" and ROLE.match(name):
            continue
        if kind == "person" and name:
            continue
        raise ValueError(f"target {target!r} is not role:<role> or person:<subject>")
    return list(value)
