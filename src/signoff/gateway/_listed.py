"""An upstream's tool as listed, classified by the policy and made strict: what signoff exposes.

Names: ``<upstream>_<tool>`` (``-`` and ``.`` in the upstream's name become
``_``). The version bound into every digest is
``mcp:<upstream>/<tool>@sha256:<digest of the upstream's input schema>``, so a
changed upstream schema is a new tool version and a proposal made under the
old one cannot execute.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from signoff.agents._names import request_name
from signoff.catalog._checks import RESERVED_PREFIX
from signoff.exceptions import CatalogError
from signoff.gateway._policy import ToolPolicy, UpstreamPolicy
from signoff.gateway._schema import ArgumentChecker, NotStrictable, schema_digest, strict_schema

MAX_DESCRIPTION = 1024
_FUNCTION_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ListedTool:
    upstream: str
    name: str
    """The upstream's own name for it."""
    exposed: str
    """signoff's name: ``<upstream>_<tool>``."""
    title: str | None
    description: str
    input_schema: Mapping[str, Any]
    strict: Mapping[str, Any]
    digest: str
    output_schema: Mapping[str, Any] | None
    hints: Mapping[str, bool] = field(default_factory=dict)
    policy: ToolPolicy = field(default_factory=lambda: ToolPolicy(kind="write", listed=False))
    checker: ArgumentChecker | None = field(default=None, compare=False, repr=False)

    @property
    def version(self) -> str:
        return f"mcp:{self.upstream}/{self.name}@sha256:{self.digest}"

    @property
    def is_read(self) -> bool:
        return self.policy.kind == "read"

    def arguments(self, raw: Mapping[str, Any] | str | bytes) -> dict[str, Any]:
        assert self.checker is not None
        return self.checker.check(raw)

    def upstream_arguments(self, values: Mapping[str, Any]) -> dict[str, Any]:
        assert self.checker is not None
        return self.checker.upstream_arguments(values)

    def hint_text(self) -> str | None:
        """The upstream's annotations, said as hints (they classify nothing)."""
        said = [name for name, value in self.hints.items() if value]
        if not said:
            return None
        return (
            f"The MCP server {self.upstream} calls it {', '.join(said)} (a hint only: signoff's "
            "policy decides what needs confirmation)."
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """An upstream tool signoff does not expose, and why (fail closed)."""

    upstream: str
    name: str
    reason: str


def classify(
    upstream: str, tools: list[types.Tool], policy: UpstreamPolicy
) -> tuple[list[ListedTool], list[Skipped]]:
    """The exposed tools of one listing and the ones left out, each with its reason."""
    listed: list[ListedTool] = []
    skipped: list[Skipped] = []
    seen: dict[str, str] = {}
    for tool in tools:
        try:
            item = _listed(upstream, tool, policy.tool(tool.name))
        except (NotStrictable, CatalogError) as exc:
            skipped.append(Skipped(upstream, tool.name, str(exc)))
            continue
        if item.exposed in seen:
            skipped.append(
                Skipped(upstream, tool.name, f"its name collides with {seen[item.exposed]!r}")
            )
            continue
        seen[item.exposed] = tool.name
        listed.append(item)
    return listed, skipped


def exposed_name(upstream: str, tool: str) -> str:
    name = f"{upstream}_{re.sub(r'[-.]', '_', tool)}"
    if not name.isidentifier():
        raise CatalogError(f"{tool!r} does not make an identifier ({name!r})")
    return name


def _listed(upstream: str, tool: types.Tool, policy: ToolPolicy) -> ListedTool:
    exposed = exposed_name(upstream, tool.name)
    if policy.kind == "write":
        request_name(exposed)  # ≤ 64 characters as request_<name>_confirmation
    elif not _FUNCTION_NAME.match(exposed):
        raise CatalogError(f"{exposed!r} is longer than 64 characters")
    original = dict(tool.input_schema)
    strict = strict_schema(original)
    properties = strict.get("properties", {})
    reserved = sorted(f for f in properties if f.startswith(RESERVED_PREFIX))
    if reserved and policy.kind == "write":
        raise CatalogError(
            f"its arguments {reserved} use the prefix {RESERVED_PREFIX!r} the request tools keep"
        )
    unknown = [f for f in policy.retype if f not in properties]
    if unknown:
        raise CatalogError(f"the policy's retype names {unknown}, which are not arguments")
    hints = {}
    if tool.annotations is not None:
        hints = {
            "read-only": tool.annotations.read_only_hint is True,
            "destructive": tool.annotations.destructive_hint is True,
            "idempotent": tool.annotations.idempotent_hint is True,
            "open-world": tool.annotations.open_world_hint is True,
        }
    description = (tool.description or "").strip() or (
        f"The tool {tool.name} of the MCP server {upstream}."
    )
    return ListedTool(
        upstream=upstream,
        name=tool.name,
        exposed=exposed,
        title=tool.title,
        description=description[:MAX_DESCRIPTION],
        input_schema=original,
        strict=strict,
        digest=schema_digest(original),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        hints=hints,
        policy=policy,
        checker=ArgumentChecker(exposed, original, strict),
    )
