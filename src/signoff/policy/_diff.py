"""``signoff policy diff``: what a new file changes, and for which pending proposals.

Pending proposals keep the policy they were proposed under (their snapshot,
PROTOCOL rule 4, and the version their token binds); the diff says, for each,
what the new file would ask of the same request, so an operator sees who
would be affected before applying it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from signoff._model import Principal, Proposal
from signoff.catalog._catalog import Catalog
from signoff.catalog._thresholds import thresholds_in_effect
from signoff.catalog._types import ResourceState
from signoff.exceptions import SignoffError
from signoff.policy._effective import effective_policy, thresholds_for
from signoff.policy._file import PolicyFile


@dataclass(frozen=True, slots=True)
class ProposalChange:
    """What the new file would change for one pending proposal."""

    proposal_id: str
    tenant: str
    tool: str
    changes: tuple[str, ...]
    """``key: old → new`` lines; empty when the new file asks the same."""
    error: str | None = None


def document_changes(old: Mapping[str, Any], new: Mapping[str, Any], prefix: str = "") -> list[str]:
    """``+ key = value``, ``- key``, ``~ key: old → new`` per changed setting."""
    lines: list[str] = []
    for key in sorted(set(old) | set(new)):
        where = f"{prefix}{key}"
        if key not in new:
            lines.append(f"- {where}")
        elif key not in old and isinstance(new[key], dict):
            lines += document_changes({}, new[key], f"{where}.")
        elif key not in old:
            lines.append(f"+ {where} = {new[key]!r}")
        elif isinstance(old[key], dict) and isinstance(new[key], dict):
            lines += document_changes(old[key], new[key], f"{where}.")
        elif old[key] != new[key]:
            lines.append(f"~ {where}: {old[key]!r} → {new[key]!r}")
    return lines


def pending_changes(
    policy: PolicyFile, catalog: Catalog, pending: Iterable[Proposal]
) -> list[ProposalChange]:
    return [_change(policy, catalog, proposal) for proposal in pending]


def _change(policy: PolicyFile, catalog: Catalog, proposal: Proposal) -> ProposalChange:
    ids = {"proposal_id": proposal.proposal_id, "tenant": proposal.tenant, "tool": proposal.tool}
    try:
        tool = catalog.get(proposal.tool)
        args = tool.load(proposal.arguments)
        state = ResourceState(
            resource_id=proposal.resource_id,
            version=proposal.state_version,
            summary=dict(proposal.state.get("summary") or {}),
            beneficiary=proposal.state.get("beneficiary"),
        )
        requester = Principal(
            proposal.requester_subject,
            proposal.tenant,
            roles=frozenset(proposal.state.get("requester_roles") or ()),
            actor=proposal.requester_actor,
        )
        with thresholds_in_effect(thresholds_for(policy, tool, proposal.tenant)):
            risk = tool.risk(args, state)
        base = tool.policy(args, state, risk)
        new = effective_policy(
            policy,
            tool,
            requester,
            base,
            risk.level,
            arguments=proposal.arguments,
            resource_id=proposal.resource_id,
        ).to_dict()
    except SignoffError as exc:
        return ProposalChange(**ids, changes=(), error=f"[{exc.code}] {exc.message}")
    changes = []
    if risk.level != proposal.risk.level:
        changes.append(f"risk: {proposal.risk.level.value} → {risk.level.value}")
    old = proposal.policy
    for key in sorted((set(old) | set(new)) - {"version"}):
        if old.get(key) != new.get(key):
            changes.append(f"{key}: {old.get(key)!r} → {new.get(key)!r}")
    return ProposalChange(**ids, changes=tuple(changes))
