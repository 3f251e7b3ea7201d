"""propose: raw model arguments become a frozen, previewable snapshot."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from signoff._canonical import args_digest
from signoff._clock import to_micros
from signoff._model import Principal, Proposal, ProposalStatus
from signoff.catalog._types import Clarification, Preview
from signoff.exceptions import ClarificationNeeded, InvalidRequest
from signoff.gate._context import GateContext, log
from signoff.gate._effective import proposal_policy
from signoff.gate._policy import confirmed
from signoff.store._sql import AuditEntry, audit_entry

MAX_RATIONALE = 4000
MAX_ID = 128


def propose(
    ctx: GateContext,
    principal: Principal,
    tool_name: str,
    raw_args: Mapping[str, Any] | str | bytes,
    *,
    rationale: str | None = None,
    supersedes: str | None = None,
    mandate_id: str | None = None,
) -> Proposal:
    tool = ctx.catalog.get(tool_name)
    if rationale is not None and len(rationale) > MAX_RATIONALE:
        raise InvalidRequest(f"rationale longer than {MAX_RATIONALE} characters")
    if supersedes is not None:
        check_supersedes(ctx, principal, tool_name, supersedes)
    # The tool sees the roles the directory grants now, not merely what the token claims.
    principal = confirmed(principal, ctx.directory)
    normalized = tool.normalize(tool.parse(raw_args), principal)
    if isinstance(normalized, Clarification):
        raise ClarificationNeeded(normalized.question, tool=tool.name, field=normalized.field)
    state = tool.read_state(normalized, principal)
    preview = tool.preview(normalized, state)
    arguments = tool.canonical(normalized)
    # The tool's Python policy, overridden by the policy file in force (docs/POLICIES.md).
    risk, policy = proposal_policy(ctx, tool, principal, normalized, state, arguments)
    now = ctx.clock.now()
    action_id = ctx.minter.new_id("act_")
    proposal = Proposal(
        proposal_id=ctx.minter.new_id("prop_"),
        action_id=action_id,
        tenant=principal.tenant,
        requester_subject=principal.subject,
        requester_actor=principal.actor,
        tool=tool.name,
        tool_version=tool.version,
        arguments=arguments,
        args_digest=args_digest(tool.name, tool.version, arguments),
        resource_id=state.resource_id,
        state_version=state.version,
        state={
            "summary": state.summary,
            "beneficiary": state.beneficiary,
            # The roles the read step saw (token and directory); every later step reads as
            # this requester again and requires each of them to hold still (rule 11).
            "requester_roles": sorted(principal.roles),
            # A person is (issuer, subject): only the same provider's tokens act as them.
            "requester_issuer": principal.issuer,
            # The proposal a reviewer returned, which this one answers (frozen with it).
            **({"supersedes": supersedes} if supersedes is not None else {}),
        },
        risk=risk,
        policy=policy.to_dict(),
        # As the store gives it back: JSON values, lists as tuples.
        preview=Preview.from_dict(json.loads(json.dumps(preview.to_dict()))),
        rationale=rationale,
        # Handed to the provider and kept in receipts: no resource id, which may name a person.
        request_key=f"{tool.name}:{principal.tenant}:{action_id}",
        status=ProposalStatus.AWAITING_CONFIRMATION,
        version=1,
        created_at=now,
        expires_at=now + policy.ttl,
    )
    if mandate_id is not None:
        from signoff.gate._mandate_debit import propose_under_mandate

        return propose_under_mandate(ctx, principal, proposal, policy, mandate_id)
    record_new(ctx, principal, proposal)
    log.info("proposal %s created for %s", proposal.proposal_id, proposal.tool)
    return proposal


def _issuer_of(principal: Principal) -> dict[str, str]:
    """The identity provider that vouched for the caller, when a token named one."""
    return {} if principal.issuer is None else {"issuer": principal.issuer}


def created_event(principal: Principal, proposal: Proposal, now: int) -> AuditEntry:
    """``proposal.created``: what was frozen, by whom, under which policy."""
    data: dict[str, Any] = {
        "tool": proposal.tool,
        "tool_version": proposal.tool_version,
        "args_digest": proposal.args_digest,
        "resource_id": proposal.resource_id,
        "state_version": proposal.state_version,
        "risk": proposal.risk.level.value,
        "policy": proposal.policy,
        "preview_digest": _digest_of(proposal.preview.to_dict()),
        "expires_at": to_micros(proposal.expires_at),
        **_issuer_of(principal),
    }
    if proposal.supersedes is not None:
        data["supersedes"] = proposal.supersedes
    if proposal.mandate is not None:
        data["mandate_id"] = proposal.mandate["mandate_id"]
        data["status"] = proposal.status.value
    return audit_entry(
        tenant=proposal.tenant,
        at=now,
        kind="proposal.created",
        proposal_id=proposal.proposal_id,
        actor=principal.label(),
        data=data,
    )


def record_new(ctx: GateContext, principal: Principal, proposal: Proposal) -> None:
    """Insert an awaiting proposal and its ``proposal.created`` event: one write step."""
    event = created_event(principal, proposal, to_micros(proposal.created_at))
    ctx.write(lambda tx: tx.record_proposal(proposal, event), one_statement=True)


def check_supersedes(ctx: GateContext, principal: Principal, tool: str, old_id: str) -> None:
    """Only a proposal returned with changes requested, of the same tool, by the same person,
    seen by this caller, may be superseded; anything else is 404 or 409."""
    from signoff.exceptions import InvalidState
    from signoff.gate._circle import load_visible

    if not 0 < len(old_id) <= MAX_ID:
        raise InvalidRequest(f"supersedes is a proposal id of 1 to {MAX_ID} characters")
    with ctx.store.read() as tx:
        old = load_visible(tx, principal, old_id, ctx.directory_in(tx))
    if old.requester_subject != principal.subject or old.tool != tool:
        raise InvalidRequest(
            "a proposal supersedes one of the same tool, requested for the same person",
            proposal_id=old_id,
        )
    if old.status is not ProposalStatus.CHANGES_REQUESTED:
        raise InvalidState(
            f"only a proposal with changes requested can be superseded; it is {old.status.value}",
            proposal_id=old_id,
            status=old.status.value,
        )


def _digest_of(value: Any) -> str:
    """``preview_digest`` (hashed into the audit event): SHA-256 of ``json.dumps(value,
    sort_keys=True)``, with one encoder for the process (tests/test_json_bytes.py)."""
    return hashlib.sha256(_SORTED_JSON(value).encode()).hexdigest()


_SORTED_JSON = json.JSONEncoder(sort_keys=True).encode
