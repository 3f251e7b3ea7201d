"""Which audit events are notifications, and what a notification says.

A notification is built from one audit event and the proposal it is about,
read from the store when it is sent; ``proposal_status`` is the status as of
the event. It carries ids, statuses, the tool, a title naming only the tool,
the role that may decide, the deadline and a link to the confirmation page —
never a token, a token hash or the arguments. The preview's own title is left
out: a tool writes it from the arguments (the recipient of an e-mail, the
amount of a refund).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from signoff._clock import from_micros
from signoff._model import Proposal, ProposalStatus
from signoff.audit._chain import AuditEvent
from signoff.store._q_followups import Assignment

PROPOSAL_AWAITING = "proposal.awaiting_confirmation"
PROPOSAL_APPROVED = "proposal.approved"
PROPOSAL_REJECTED = "proposal.rejected"
PROPOSAL_CHANGES_REQUESTED = "proposal.changes_requested"
PROPOSAL_EXPIRED = "proposal.expired"
PROPOSAL_CANCELLED = "proposal.cancelled"
PROPOSAL_REVOKED = "proposal.revoked"
PROPOSAL_REMINDED = "proposal.reminded"
PROPOSAL_ESCALATED = "proposal.escalated"
PROPOSAL_REASSIGNED = "proposal.reassigned"
EXECUTION_SUCCEEDED = "execution.succeeded"
EXECUTION_FAILED = "execution.failed"
EXECUTION_NEEDS_ATTENTION = "execution.needs_attention"
EXECUTION_RESOLVED = "execution.resolved"

_BY_KIND = {
    "proposal.created": PROPOSAL_AWAITING,
    "decision.approved": PROPOSAL_APPROVED,
    "decision.rejected": PROPOSAL_REJECTED,
    "decision.changes_requested": PROPOSAL_CHANGES_REQUESTED,
    "proposal.expired": PROPOSAL_EXPIRED,
    "proposal.cancelled": PROPOSAL_CANCELLED,
    "proposal.revoked": PROPOSAL_REVOKED,
    "proposal.reminded": PROPOSAL_REMINDED,
    "proposal.escalated": PROPOSAL_ESCALATED,
    "proposal.reassigned": PROPOSAL_REASSIGNED,
    "execution.succeeded": EXECUTION_SUCCEEDED,
    "execution.failed_terminal": EXECUTION_FAILED,
    "execution.failed_retryable": EXECUTION_FAILED,
    "execution.needs_attention": EXECUTION_NEEDS_ATTENTION,
    "execution.resolved": EXECUTION_RESOLVED,
}
EVENT_TYPES: frozenset[str] = frozenset(_BY_KIND.values())
"""Every notification type; anything else in the audit chain is not notified."""

DECIDED = frozenset({PROPOSAL_APPROVED, PROPOSAL_REJECTED, PROPOSAL_CHANGES_REQUESTED})
ASKING = frozenset({PROPOSAL_AWAITING, PROPOSAL_REMINDED, PROPOSAL_ESCALATED, PROPOSAL_REASSIGNED})
"""The notifications that ask people to decide (e-mail sends these by default)."""
NEWLY_ADDRESSED = frozenset({PROPOSAL_ESCALATED, PROPOSAL_REASSIGNED})
"""Addressed to the targets the event added, not to everyone who may decide."""
# The proposal's status right after each event (decisions and resolutions record theirs):
# a notification says where the proposal stood at its event, not where it stands when sent.
_STATUS_AFTER = {
    "proposal.created": ProposalStatus.AWAITING_CONFIRMATION,
    "proposal.expired": ProposalStatus.EXPIRED,
    "proposal.cancelled": ProposalStatus.CANCELLED,
    "proposal.revoked": ProposalStatus.REVOKED,
    "proposal.reminded": ProposalStatus.AWAITING_CONFIRMATION,
    "proposal.escalated": ProposalStatus.AWAITING_CONFIRMATION,
    "proposal.reassigned": ProposalStatus.AWAITING_CONFIRMATION,
    "execution.succeeded": ProposalStatus.SUCCEEDED,
    "execution.failed_terminal": ProposalStatus.FAILED_TERMINAL,
    "execution.failed_retryable": ProposalStatus.FAILED_RETRYABLE,
    "execution.needs_attention": ProposalStatus.NEEDS_ATTENTION,
}


def status_at(event: AuditEvent, recorded: dict[str, Any]) -> str | None:
    """The proposal's status as of ``event``: by its kind, else what the event recorded."""
    known = _STATUS_AFTER.get(event.kind)
    if known is not None:
        return known.value
    status = recorded.get("status")
    return status if isinstance(status, str) else None


def title_of(tool: str) -> str:
    """What a notification calls the operation: its tool, never text built from arguments."""
    return f"a {tool} request"


def event_type_of(kind: str) -> str | None:
    """The notification type of an audit event kind, or ``None`` when it is not one."""
    return _BY_KIND.get(kind)


@dataclass(frozen=True, slots=True)
class Notification:
    """One event for one destination: a stable id, a type, and the JSON body."""

    event_id: str
    event_type: str
    tenant: str
    seq: int
    data: dict[str, Any]
    required_role: str | None
    page_url: str | None
    requester: str | None = None
    requester_confirms: bool = False
    assigned: tuple[str, ...] = ()
    """Escalation or reassignment targets who may decide too (``role:``/``person:``)."""
    role_replaced: bool = False
    """An admin reassigned the proposal: its role no longer decides."""
    addressed: tuple[str, ...] | None = None
    """Only these targets (an escalation's or a reassignment's), not everyone who may decide."""
    approvers: tuple[str, ...] = ()
    """Who approved the proposal (as of sending): the people a receipt goes to."""

    def body(self) -> dict[str, Any]:
        """The Standard Webhooks payload shape: ``type``, ``timestamp``, ``data``."""
        return {"type": self.event_type, "timestamp": self.data["at"], "data": self.data}


def event_id(event: AuditEvent) -> str:
    """Stable per audit event (its chain hash), so a receiver deduplicates redeliveries."""
    return f"evt_{event.hash[:32]}"


def notification(
    event: AuditEvent,
    event_type: str,
    proposal: Proposal | None,
    public_url: str,
    assignment: Assignment | None = None,
) -> Notification:
    page = None
    if event.proposal_id is not None:
        page = f"{public_url.rstrip('/')}/ui/proposals/{quote(event.proposal_id, safe='')}"
    data: dict[str, Any] = {
        "event_id": event_id(event),
        "tenant": event.tenant,
        "audit_seq": event.seq,
        "at": from_micros(event.at).isoformat().replace("+00:00", "Z"),
        "proposal_id": event.proposal_id,
        "execution_id": event.execution_id,
        "actor": event.actor,
        "page_url": page,
    }
    recorded = event.payload()
    for key in ("status", "reason_code", "error_code", "step", "targets"):
        if key in recorded:
            data[key] = recorded[key]
    role, requester, requester_confirms = None, None, False
    approvers: tuple[str, ...] = ()
    if proposal is not None:
        approvers = tuple(a.approver for a in proposal.approvals if a.kind.value == "approve")
        requester = proposal.requester_subject
        requester_confirms = bool(proposal.policy.get("requester_confirms"))
        role = proposal.required_role
        data.update(
            tool=proposal.tool,
            title=title_of(proposal.tool),
            proposal_status=status_at(event, recorded) or proposal.status.value,
            required_role=role,
            risk=proposal.risk.level.value,
            expires_at=proposal.expires_at.isoformat().replace("+00:00", "Z"),
            requester=proposal.requester_subject,
        )
    addressed = None
    if event_type in NEWLY_ADDRESSED:
        addressed = tuple(str(t) for t in recorded.get("targets") or ())
    return Notification(
        event_id(event),
        event_type,
        event.tenant,
        event.seq,
        data,
        None if assignment is not None and assignment.role_replaced else role,
        page,
        requester=requester,
        requester_confirms=requester_confirms,
        assigned=() if assignment is None else assignment.targets,
        role_replaced=assignment is not None and assignment.role_replaced,
        addressed=addressed,
        approvers=approvers,
    )
