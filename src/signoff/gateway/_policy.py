"""The ``[upstreams]`` part of the policy file: which upstream tools are reads, which writes.

Classification is the deployment's, never the upstream's: an upstream's
annotations (``readOnlyHint``, ``destructiveHint``) are shown to the person as
hints and decide nothing. A tool the policy does not list is a write that needs
the upstream's approver (fail closed). :func:`parse_gateway_policy` checks a
parsed TOML document (the rest of the file — native tools' rules, mandates —
is another parser's); :func:`load_gateway_policy` reads the file.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from signoff._canonical import canonical_json
from signoff.catalog._types import RiskLevel, SideEffect
from signoff.exceptions import InvalidGatewayPolicy

Kind = Literal["read", "write"]
FoundWhen = Literal["ok", "text_equals", "text_contains"]
DEFAULT_SIDE_EFFECT = SideEffect.IRREVERSIBLE
DEFAULT_TTL_SECONDS = 15 * 60
_ROLE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
_UPSTREAM_KEYS = frozenset({"approver_role", "tools"})
_READ_KEYS = frozenset({"kind", "labels", "title"})
_WRITE_KEYS = frozenset(
    {
        "kind",
        "side_effect",
        "approver_role",
        "requester_confirms",
        "approvals",
        "retype",
        "in_band",
        "risk",
        "risk_rules",
        "labels",
        "title",
        "impact",
        "reversibility",
        "lookup",
        "ttl_seconds",
    }
)
_RULE_KEYS = frozenset(
    {"argument", "matches", "equals", "greater_than", "longer_than", "level", "reason", "approvals"}
)
_LOOKUP_KEYS = frozenset({"tool", "arguments", "found_when", "argument"})


@dataclass(frozen=True, slots=True)
class RiskRule:
    """Raises the risk (and optionally the approvals) when an argument matches."""

    argument: str
    level: RiskLevel
    reason: str
    matches: re.Pattern[str] | None = None
    equals: Any = None
    greater_than: int | None = None
    longer_than: int | None = None
    approvals: int | None = None

    def applies(self, arguments: Mapping[str, Any]) -> bool:
        value = arguments.get(self.argument)
        if self.matches is not None:
            return isinstance(value, str) and self.matches.search(value) is not None
        if self.greater_than is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                return False
            return value > self.greater_than
        if self.longer_than is not None:
            return isinstance(value, str | list) and len(value) > self.longer_than
        return bool(value == self.equals)


@dataclass(frozen=True, slots=True)
class LookupRule:
    """How to learn what became of a write whose answer was lost: a read of the same upstream.

    ``arguments`` maps each argument of the lookup tool to the write's argument it takes.
    ``found_when``: ``ok`` (the lookup answered without an error), ``text_equals`` or
    ``text_contains`` (its text equals / contains the write's ``argument``). A lookup that
    does not find the effect never leads to a second call: a person settles it.
    """

    tool: str
    arguments: Mapping[str, str]
    found_when: FoundWhen
    argument: str | None = None


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """What the policy says about one upstream tool (or the fail-closed default)."""

    kind: Kind
    listed: bool
    approver_role: str | None = None
    side_effect: SideEffect = DEFAULT_SIDE_EFFECT
    requester_confirms: bool = False
    approvals: int = 1
    retype: tuple[str, ...] = ()
    in_band: bool = False
    risk: RiskLevel = RiskLevel.MEDIUM
    risk_rules: tuple[RiskRule, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    title: str | None = None
    impact: str | None = None
    reversibility: str | None = None
    lookup: LookupRule | None = None
    ttl_seconds: int = DEFAULT_TTL_SECONDS
    version: str = "unlisted"
    """The policy version recorded with each proposal: a digest of this tool's section."""


@dataclass(frozen=True, slots=True)
class UpstreamPolicy:
    name: str
    approver_role: str
    tools: Mapping[str, ToolPolicy] = field(default_factory=dict)

    def tool(self, name: str) -> ToolPolicy:
        """The tool's section, or — not listed — a write that this upstream's approver confirms."""
        listed = self.tools.get(name)
        if listed is not None:
            return listed
        return ToolPolicy(kind="write", listed=False, approver_role=self.approver_role)


@dataclass(frozen=True, slots=True)
class GatewayPolicy:
    upstreams: Mapping[str, UpstreamPolicy] = field(default_factory=dict)
    source: str | None = None

    def upstream(self, name: str) -> UpstreamPolicy:
        found = self.upstreams.get(name)
        return found if found is not None else UpstreamPolicy(name, default_approver(name))


def default_approver(upstream: str) -> str:
    """Who approves an upstream's writes when its section names no one: ``<name>_approver``."""
    return f"{upstream}_approver"


def load_gateway_policy(path: str | Path | None) -> GatewayPolicy:
    """The ``[upstreams]`` part of the policy file; no file is the fail-closed empty policy."""
    if path is None:
        return GatewayPolicy()
    file = Path(path)
    try:
        document = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidGatewayPolicy(f"cannot read the policy file {file}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InvalidGatewayPolicy(f"the policy file {file} is not TOML: {exc}") from None
    return parse_gateway_policy(document, source=str(file))


def parse_gateway_policy(
    document: Mapping[str, Any], *, source: str | None = None
) -> GatewayPolicy:
    """Check the ``upstreams`` table of a parsed policy document; other tables are ignored."""
    table = document.get("upstreams", {})
    if not isinstance(table, Mapping):
        raise _error("[upstreams] must be a table of upstream names")
    upstreams = {}
    for name, section in table.items():
        upstreams[str(name)] = _upstream(str(name), section)
    return GatewayPolicy(upstreams, source)


def _upstream(name: str, section: Any) -> UpstreamPolicy:
    from signoff.gateway._config import UPSTREAM_NAME

    where = f"[upstreams.{name}]"
    if not UPSTREAM_NAME.match(name):
        raise _error(f"{where}: an upstream name is 1-20 lowercase letters and digits")
    table = _table(section, where, _UPSTREAM_KEYS)
    approver = _role(table.get("approver_role", default_approver(name)), f"{where} approver_role")
    tools = _table(table.get("tools", {}), f"{where}.tools", None)
    return UpstreamPolicy(
        name,
        approver,
        {
            str(tool): _tool(f"{where[:-1]}.tools.{tool}]", spec, approver)
            for tool, spec in tools.items()
        },
    )


def _tool(where: str, spec: Any, approver: str) -> ToolPolicy:
    raw = _table(spec, where, None)
    kind = raw.get("kind")
    if kind not in ("read", "write"):
        raise _error(f'{where}: kind = "read" or kind = "write" is required')
    _known(raw, where, _READ_KEYS if kind == "read" else _WRITE_KEYS)
    labels = _labels(raw.get("labels", {}), where)
    title = _text(raw.get("title"), f"{where} title")
    version = "gw-" + hashlib.sha256(canonical_json(_plain(raw))).hexdigest()[:16]
    if kind == "read":
        return ToolPolicy(kind="read", listed=True, labels=labels, title=title, version=version)
    requester = _bool(raw.get("requester_confirms", False), f"{where} requester_confirms")
    role = raw.get("approver_role", None if requester else approver)
    return ToolPolicy(
        kind="write",
        listed=True,
        approver_role=None if role is None else _role(role, f"{where} approver_role"),
        side_effect=_side_effect(raw.get("side_effect"), where),
        requester_confirms=requester,
        approvals=_count(raw.get("approvals", 1), f"{where} approvals"),
        retype=_names(raw.get("retype", []), f"{where} retype"),
        in_band=_bool(raw.get("in_band", False), f"{where} in_band"),
        risk=_level(raw.get("risk", "medium"), f"{where} risk"),
        risk_rules=tuple(
            _rule(rule, f"{where} risk_rules[{i}]")
            for i, rule in enumerate(_list(raw.get("risk_rules", []), f"{where} risk_rules"))
        ),
        labels=labels,
        title=title,
        impact=_text(raw.get("impact"), f"{where} impact"),
        reversibility=_text(raw.get("reversibility"), f"{where} reversibility"),
        lookup=None if "lookup" not in raw else _lookup(raw["lookup"], f"{where} lookup"),
        ttl_seconds=_ttl(raw.get("ttl_seconds", DEFAULT_TTL_SECONDS), f"{where} ttl_seconds"),
        version=version,
    )


def _rule(spec: Any, where: str) -> RiskRule:
    raw = _table(spec, where, _RULE_KEYS)
    argument = _text(raw.get("argument"), f"{where} argument")
    if argument is None:
        raise _error(f'{where}: argument = "…" names the argument the rule looks at')
    tests = [k for k in ("matches", "equals", "greater_than", "longer_than") if k in raw]
    if len(tests) != 1:
        raise _error(f"{where}: give exactly one of matches, equals, greater_than, longer_than")
    pattern = None
    if "matches" in raw:
        try:
            pattern = re.compile(str(raw["matches"]))
        except re.error as exc:
            raise _error(f"{where} matches: not a regular expression ({exc})") from None
    reason = _text(raw.get("reason"), f"{where} reason")
    return RiskRule(
        argument=argument,
        level=_level(raw.get("level", "high"), f"{where} level"),
        reason=reason or f"{argument} matches a risk rule",
        matches=pattern,
        equals=raw.get("equals"),
        greater_than=_int(raw.get("greater_than"), f"{where} greater_than"),
        longer_than=_int(raw.get("longer_than"), f"{where} longer_than"),
        approvals=None
        if "approvals" not in raw
        else _count(raw["approvals"], f"{where} approvals"),
    )


def _lookup(spec: Any, where: str) -> LookupRule:
    raw = _table(spec, where, _LOOKUP_KEYS)
    tool = _text(raw.get("tool"), f"{where} tool")
    if tool is None:
        raise _error(f'{where}: tool = "…" names a read tool of the same upstream')
    found = raw.get("found_when", "ok")
    if found not in ("ok", "text_equals", "text_contains"):
        raise _error(f"{where} found_when: ok, text_equals or text_contains")
    argument = _text(raw.get("argument"), f"{where} argument")
    if (found != "ok") != (argument is not None):
        raise _error(f"{where}: text_equals and text_contains name an argument; ok names none")
    arguments = _table(raw.get("arguments", {}), f"{where} arguments", None)
    if not all(isinstance(v, str) for v in arguments.values()):
        raise _error(f"{where} arguments: each lookup argument names an argument of the write")
    return LookupRule(tool, {str(k): str(v) for k, v in arguments.items()}, found, argument)


def _table(value: Any, where: str, keys: frozenset[str] | None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _error(f"{where} must be a table")
    if keys is not None:
        _known(value, where, keys)
    return value


def _known(value: Mapping[str, Any], where: str, keys: frozenset[str]) -> None:
    unknown = sorted(set(value) - keys)
    if unknown:
        raise _error(
            f"{where}: unknown key(s) {', '.join(unknown)} — allowed: {', '.join(sorted(keys))}"
        )


def _labels(value: Any, where: str) -> dict[str, str]:
    labels = _table(value, f"{where} labels", None)
    if not all(isinstance(v, str) and v.strip() for v in labels.values()):
        raise _error(f"{where} labels: each label is a non-empty string")
    return {str(k): str(v) for k, v in labels.items()}


def _text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise _error(f"{where} is a non-empty string")
    return value


def _role(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _ROLE.match(value):
        raise _error(f"{where} is a role name (letters, digits, _ . : -)")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _error(f"{where} is true or false")
    return value


def _int(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _error(f"{where} is a whole number ≥ 0")
    return value


def _count(value: Any, where: str) -> int:
    number = _int(value, where)
    if number is None or not 1 <= number <= 10:
        raise _error(f"{where} is a whole number from 1 to 10")
    return number


def _ttl(value: Any, where: str) -> int:
    number = _int(value, where)
    if number is None or not 60 <= number <= 7 * 24 * 3600:
        raise _error(f"{where} is between 60 seconds and 7 days")
    return number


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _error(f"{where} is a list")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    items = _list(value, where)
    if not all(isinstance(v, str) and v for v in items):
        raise _error(f"{where} lists argument names")
    return tuple(items)


def _level(value: Any, where: str) -> RiskLevel:
    try:
        return RiskLevel(value)
    except ValueError:
        raise _error(f"{where} is low, medium, high or critical") from None


def _side_effect(value: Any, where: str) -> SideEffect:
    if value is None:
        return DEFAULT_SIDE_EFFECT
    try:
        return SideEffect(value)
    except ValueError:
        raise _error(f"{where} side_effect is none, reversible, irreversible or external") from None


def _plain(value: Any) -> Any:
    """The section as JSON values (TOML dates as text), for its digest."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str | int | bool) or value is None:
        return value
    return str(value)


def _error(message: str) -> InvalidGatewayPolicy:
    return InvalidGatewayPolicy(message)
