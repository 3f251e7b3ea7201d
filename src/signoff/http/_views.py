"""JSON views of proposals, executions, receipts and audit events (pydantic, no FastAPI).

The client in :mod:`signoff.client` parses answers with these same models.
"""

from __future__ import annotations

import enum
import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from signoff._clock import from_micros
from signoff._model import (
    DecisionKind,
    DecisionResult,
    Execution,
    ExecutionStatus,
    Principal,
    Proposal,
    ProposalStatus,
    Receipt,
)
from signoff.audit._chain import AuditEvent
from signoff.catalog._types import RiskLevel


class View(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PreviewFieldView(View):
    name: str
    label: str
    machine_value: Any = Field(description="The canonical value the digest covers")
    display_value: str = Field(description="Rendered from the snapshot, e.g. ¥199.00")


class PreviewView(View):
    title: str
    description: str
    fields: list[PreviewFieldView]
    impact: str
    reversibility: str
    external_reach: str
    facts: list[str]


class RiskView(View):
    level: RiskLevel
    reasons: list[str]


class RequesterView(View):
    subject: str = Field(description="The person the request is for (JWT sub)")
    actor: str | None = Field(description="The agent acting for them (JWT act.sub)")


class SuggestionView(View):
    note: str = Field(description="The reviewer's words: what to change and why")
    fields: dict[str, Any] = Field(description="Argument name → the value the reviewer suggests")


class ApprovalView(View):
    approver: str
    delegate_of: str | None = Field(
        default=None, description="Whom the approver stood in for (a delegation)"
    )
    decision: DecisionKind
    step: str
    reason_code: str | None
    reason: str | None
    decided_at: datetime
    suggestion: SuggestionView | None = Field(
        default=None, description="For request_changes: what the reviewer suggests"
    )


class MandateCoverView(View):
    """What a write under a mandate debited, and what was left after it."""

    mandate_id: str
    approvers: list[str] = Field(description="The people who approved the mandate")
    amount_minor: int | None
    currency: str | None
    remaining_amount_minor: int | None = Field(description="The budget left after this write")
    remaining_count: int | None = Field(description="The writes left after this one")

    @classmethod
    def of(cls, cover: dict[str, Any]) -> MandateCoverView:
        return cls.model_validate(cover)


class ProposalView(View):
    proposal_id: str
    action_id: str
    status: ProposalStatus
    version: int = Field(description="Send it back as expected_version when deciding")
    tool: str
    tool_version: str
    arguments: dict[str, Any] = Field(description="Canonical arguments a*")
    args_digest: str = Field(description="sha256(JCS({tool, tool_version, args}))")
    resource: str
    preview: PreviewView
    risk: RiskView
    required_role: str | None
    retype: list[str] = Field(description="Fields the approver must type again to approve")
    requester: RequesterView
    approvals: list[ApprovalView]
    untrusted_rationale: str | None = Field(
        description="The model's own explanation; untrusted, never a fact"
    )
    created_at: datetime
    expires_at: datetime
    policy_version: str = Field(
        "", description="Digest of the effective policy it was proposed under (its token binds it)"
    )
    mandate: MandateCoverView | None = Field(
        None, description="The standing approval this write was confirmed under, if any"
    )
    mandate_refusal: dict[str, Any] | None = Field(
        None,
        description="Why the named mandate did not cover it (the policy fell back to a person)",
    )
    supersedes: str | None = Field(
        default=None, description="The proposal returned with changes requested that this answers"
    )
    changes_requested: SuggestionView | None = Field(
        default=None,
        description="When status is changes_requested: the suggestion to propose anew with",
    )

    @classmethod
    def of(cls, proposal: Proposal) -> ProposalView:
        returned = proposal.changes_requested
        return cls(
            proposal_id=proposal.proposal_id,
            action_id=proposal.action_id,
            status=proposal.status.value,
            version=proposal.version,
            tool=proposal.tool,
            tool_version=proposal.tool_version,
            arguments=proposal.arguments,
            args_digest=proposal.args_digest,
            resource=proposal.resource_id,
            preview=PreviewView.model_validate(proposal.preview.to_dict()),
            risk=RiskView.model_validate(proposal.risk.to_dict()),
            required_role=proposal.required_role,
            retype=list(proposal.policy.get("retype") or []),
            requester=RequesterView(
                subject=proposal.requester_subject, actor=proposal.requester_actor
            ),
            approvals=[
                ApprovalView(
                    approver=a.approver,
                    decision=a.kind.value,
                    step=a.step,
                    reason_code=a.reason_code,
                    reason=a.reason if a.suggestion is None else None,
                    decided_at=a.decided_at,
                    suggestion=None if a.suggestion is None else SuggestionView(**a.suggestion),
                    delegate_of=a.delegate_of,
                )
                for a in proposal.approvals
            ],
            untrusted_rationale=proposal.rationale,
            created_at=proposal.created_at,
            expires_at=proposal.expires_at,
            policy_version=proposal.policy_version,
            mandate=None if proposal.mandate is None else MandateCoverView.of(proposal.mandate),
            mandate_refusal=proposal.state.get("mandate_refusal"),
            supersedes=proposal.supersedes,
            changes_requested=None
            if returned is None or returned.suggestion is None
            else SuggestionView(**returned.suggestion),
        )


class ProposalList(View):
    proposals: list[ProposalView]


class ReceiptFileView(View):
    """A signed receipt as a person keeps it (docs/PROOF.md: check it offline)."""

    format: Literal["signoff-receipt/1"] = Field(description="The file's format")
    execution_id: str = Field(description="The execution it proves")
    signed_receipt: str = Field(description="The receipt: a JWS with its inclusion proofs")


class IdpPendingView(View):
    """An approval waiting for the person at their identity provider (OpenID CIBA)."""

    status: Literal["pending"] = Field(description="Nothing is recorded yet")
    auth_req_id: str = Field(description="Send it back (`auth_req_id`) to complete the approval")
    expires_in: int | None = Field(description="Seconds the provider keeps the request open")
    interval: int = Field(description="Seconds to wait between two polls")


class DecisionView(View):
    """A person's decision receipt (seed 003). A replay of its Idempotency-Key answers the
    same ``audit_id``, ``action_id``, ``status`` and ``version``; ``tool_status`` and
    ``proposal`` say where things stand now. The confirmation token is never in it
    (PROTOCOL rule 12): the requesting principal picks it up from
    ``/v1/proposals/{id}/confirmation-token``."""

    audit_id: str = Field(
        description="The decision's audit event, <tenant>:<seq> (its seq in GET /v1/audit)"
    )
    action_id: str = Field(description="The business action decided on; the same on replays")
    status: str = Field(description="The proposal's status as this decision left it")
    version: int = Field(description="The proposal's version as this decision left it")
    tool_status: str = Field(
        description="not_started until the requester executes, then the execution's status "
        "(running, succeeded, failed_retryable, failed_terminal, unknown, needs_attention)"
    )
    duplicate: bool = Field(description="True when this Idempotency-Key was answered before")
    proposal: ProposalView = Field(description="The proposal as it is now")

    @classmethod
    def of(cls, result: DecisionResult) -> DecisionView:
        return cls(
            audit_id=result.audit_id,
            action_id=result.action_id,
            status=result.status.value,
            version=result.version,
            tool_status=result.tool_status,
            duplicate=result.duplicate,
            proposal=ProposalView.of(result.proposal),
        )


class BatchItemView(View):
    """One item of a batch: its decision, or the problem that refused it (nothing decided)."""

    proposal_id: str
    status: int = Field(description="The status this item alone would have had (200, 409, …)")
    decision: DecisionView | None = None
    problem: dict[str, Any] | None = Field(
        default=None, description="RFC 9457 problem details of the refusal, with its code"
    )


class BatchView(View):
    results: list[BatchItemView] = Field(description="One per decision, in the request's order")


class InboxView(View):
    proposals: list[ProposalView] = Field(description="Oldest deadline first")
    next_after: str | None = Field(
        description="Pass as ?after= for the next page; null on the last page"
    )


class RoleGrantStatus(enum.StrEnum):
    GRANTED = "granted"
    REVOKED = "revoked"


class RoleGrantView(View):
    tenant: str
    subject: str
    role: str
    status: RoleGrantStatus
    changed_by: str
    changed_at: datetime


class RoleGrantsView(View):
    grants: list[RoleGrantView]
    mode: str = Field(description="grants, revocations or off: how the directory is consulted")


class ConfirmationTokenView(View):
    proposal_id: str
    confirmation_token: str = Field(
        description="Bound to the requesting principal; present it once to POST /v1/executions"
    )
    expires_at: datetime


class ExecutionView(View):
    execution_id: str
    proposal_id: str
    status: ExecutionStatus
    request_key: str = Field(description="The provider's idempotency key; stable per proposal")
    attempts: int
    provider_reference: str | None
    error_code: str | None
    error_message: str | None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, execution: Execution) -> ExecutionView:
        return cls(
            execution_id=execution.execution_id,
            proposal_id=execution.proposal_id,
            status=execution.status.value,
            request_key=execution.request_key,
            attempts=execution.attempts,
            provider_reference=execution.provider_reference,
            error_code=execution.error_code,
            error_message=execution.error_message,
            created_at=execution.created_at,
            updated_at=execution.updated_at,
        )


class ItemStatus(enum.StrEnum):
    """Where one item of a batch ended (a named schema for generators)."""

    SUCCEEDED = "succeeded"
    FAILED_RETRYABLE = "failed_retryable"
    FAILED_TERMINAL = "failed_terminal"


class ItemView(View):
    """One item of a batch, reported on its own (its own outcome, key and reference)."""

    resource: str = Field(description="The item's resource, e.g. order:ord_5001")
    request_key: str = Field(description="The key the provider received for this item")
    status: ItemStatus
    provider_reference: str | None
    error_code: str | None


class ReceiptView(View):
    execution_id: str
    proposal_id: str
    action_id: str
    request_key: str
    operation: str
    status: ExecutionStatus
    args_digest: str
    provider_reference: str | None
    approvers: list[str]
    completed_at: datetime | None
    items: list[ItemView] = Field(
        default_factory=list,
        description="A batch: every item's outcome, request key and provider reference; "
        "failed items are reported on their own (empty for a single write)",
    )
    mandate: MandateCoverView | None = Field(
        None, description="A write under a standing approval: the mandate and the budget left"
    )
    on_behalf_of: dict[str, str] = Field(
        default_factory=dict, description="Approver → the person they stood in for (delegation)"
    )

    @classmethod
    def of(cls, receipt: Receipt) -> ReceiptView:
        return cls(
            execution_id=receipt.execution_id,
            proposal_id=receipt.proposal_id,
            action_id=receipt.action_id,
            request_key=receipt.request_key,
            operation=receipt.operation,
            status=receipt.status.value,
            args_digest=receipt.args_digest,
            provider_reference=receipt.provider_reference,
            approvers=list(receipt.approvers),
            completed_at=receipt.completed_at,
            items=[ItemView.model_validate(item.to_dict()) for item in receipt.items],
            mandate=None if receipt.mandate is None else MandateCoverView.of(receipt.mandate),
            on_behalf_of=dict(receipt.on_behalf_of),
        )


SIGNED_RECEIPT = Field(
    None,
    description="The receipt as a JWS with inclusion proofs to a signed checkpoint, when this "
    "deployment signs; check it with `signoff audit verify --receipt` (docs/PROOF.md)",
)


class ExecutionOutcomeView(View):
    execution: ExecutionView
    receipt: ReceiptView | None = Field(description="Present once the execution is terminal")
    duplicate: bool = Field(description="True when this Idempotency-Key was answered before")
    signed_receipt: str | None = SIGNED_RECEIPT


class ExecutionStatusView(View):
    execution: ExecutionView
    receipt: ReceiptView | None
    signed_receipt: str | None = SIGNED_RECEIPT


class AuditEventView(View):
    tenant: str
    seq: int
    at: datetime
    kind: str
    proposal_id: str | None
    execution_id: str | None
    actor: str | None
    data: dict[str, Any]
    prev_hash: str
    hash: str

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventView:
        data = json.loads(event.data)
        return cls(
            tenant=event.tenant,
            seq=event.seq,
            at=from_micros(event.at),
            kind=event.kind,
            proposal_id=event.proposal_id,
            execution_id=event.execution_id,
            actor=event.actor,
            data=data if isinstance(data, dict) else {"value": data},
            prev_hash=event.prev_hash,
            hash=event.hash,
        )


class AuditLog(View):
    events: list[AuditEventView]
    next_after: int | None = None
    """The ``after`` of the next page; None on the last one."""


class WhoAmI(View):
    sub: str
    tenant: str
    roles: list[str]
    act: str | None = Field(description="The agent acting for sub, if any")

    @classmethod
    def of(cls, principal: Principal) -> WhoAmI:
        return cls(
            sub=principal.subject,
            tenant=principal.tenant,
            roles=sorted(principal.roles),
            act=principal.actor,
        )


class Health(View):
    status: Literal["ok"]


class DemoOrderView(View):
    tenant: str
    order_id: str
    owner: str
    currency: str
    payable_minor: int
    refunded_minor: int
    version: int


class LedgerEntryView(View):
    request_key: str
    reference: str
    tenant: str
    order_id: str
    amount_minor: int
    currency: str


class Ledger(View):
    entries: list[LedgerEntryView]


class MandateBudget(enum.StrEnum):
    """Whether a write under a mandate still counts against its budget."""

    HELD = "held"
    RETURNED = "returned"


class MandateStatus(enum.StrEnum):
    """Where a standing approval stands (a named schema for generators)."""

    AWAITING_CONFIRMATION = "awaiting_confirmation"
    ACTIVE = "active"
    DECLINED = "declined"
    REVOKED = "revoked"
    EXPIRED = "expired"


class MandateWriteView(View):
    proposal_id: str
    amount_minor: int | None
    currency: str | None
    budget: MandateBudget = Field(
        description="held: counted (it happened, or may have); returned: known not to have "
        "happened, its amount and count given back"
    )
    proposal_status: str
    debited_at: datetime
    returned_at: datetime | None


class MandateView(View):
    """A standing approval: its constraints, decisions, what is left and every write."""

    mandate_id: str
    status: MandateStatus
    version: int = Field(description="Send it back as expected_version when deciding")
    tool: str
    tool_version: str
    constraints: dict[str, Any]
    digest: str = Field(description="sha256(JCS) of tool, requester, constraints and expiry")
    requester: RequesterView
    required_role: str | None
    policy_version: str
    approvals: list[ApprovalView]
    preview: PreviewView
    spent_amount_minor: int
    used_count: int
    remaining_amount_minor: int | None
    remaining_count: int | None
    created_at: datetime
    expires_at: datetime
    ended_reason: str | None
    writes: list[MandateWriteView] = Field(description="Its history: every write under it")
    duplicate: bool = Field(False, description="True when this Idempotency-Key was answered before")

    @classmethod
    def of(cls, state: Any) -> MandateView:
        """From a :class:`signoff.gate._mandate.MandateState`."""
        from signoff.gate._mandate import mandate_preview

        m = state.record
        return cls(
            mandate_id=m.mandate_id,
            status=m.status,
            version=m.version,
            tool=m.tool,
            tool_version=m.tool_version,
            constraints=m.constraints,
            digest=m.digest,
            requester=RequesterView(subject=m.requester_subject, actor=m.requester_actor),
            required_role=m.required_role,
            policy_version=str(m.policy.get("version", "")),
            approvals=[
                ApprovalView(
                    approver=a.approver,
                    decision=a.kind.value,
                    step=a.step,
                    reason_code=a.reason_code,
                    reason=a.reason,
                    decided_at=a.decided_at,
                )
                for a in m.approvals
            ],
            preview=PreviewView.model_validate(mandate_preview(m).to_dict()),
            spent_amount_minor=m.spent_minor,
            used_count=m.used,
            remaining_amount_minor=state.remaining_amount_minor,
            remaining_count=state.remaining_count,
            created_at=from_micros(m.created_at),
            expires_at=from_micros(m.expires_at),
            ended_reason=m.ended_reason,
            writes=[
                MandateWriteView(
                    proposal_id=w.proposal_id,
                    amount_minor=w.amount_minor,
                    currency=w.currency,
                    budget=w.status,
                    proposal_status=w.proposal_status,
                    debited_at=from_micros(w.debited_at),
                    returned_at=None if w.returned_at is None else from_micros(w.returned_at),
                )
                for w in state.writes
            ],
            duplicate=state.duplicate,
        )
