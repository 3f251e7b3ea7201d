"""Proposals, executions and receipts as the JSON a model reads."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit

from signoff._clock import from_micros
from signoff._model import (
    DecisionResult,
    Execution,
    ExecutionStatus,
    Proposal,
    ProposalStatus,
    Receipt,
)
from signoff.agents._names import STATUS_TOOL, execute_name, request_name

DEFAULT_PUBLIC_URL = "http://127.0.0.1:8000"


class ConfirmationPages:
    """Where a person confirms a proposal: ``{base}/ui/proposals/{id}`` of ``signoff serve``.

    The URL carries no credential: whoever opens it signs in as an entitled approver.
    """

    def __init__(self, base_url: str = DEFAULT_PUBLIC_URL) -> None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(
                f"the public URL must be http(s)://host[:port][/path], got {base_url!r}"
            )
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("the public URL may not carry a query, fragment or credentials")
        self.base_url = base_url.rstrip("/")

    def url(self, proposal_id: str) -> str:
        return f"{self.base_url}/ui/proposals/{quote(proposal_id, safe='')}"


def proposal_payload(
    proposal: Proposal,
    *,
    status: ProposalStatus,
    confirm_url: str,
    token: str | None,
    execution: Execution | None = None,
    receipt: Receipt | None = None,
    confirmation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``status`` may differ from ``proposal.status``: a window past its end reads as expired."""
    return {
        "kind": "proposal",
        "proposal_id": proposal.proposal_id,
        "status": status.value,
        "tool": proposal.tool,
        "arguments": proposal.arguments,
        "args_digest": proposal.args_digest,
        "preview": proposal.preview.to_dict(),
        "risk": proposal.risk.to_dict(),
        "approval": proposal.policy,
        "approvals": [
            {
                "approver": a.approver,
                "decision": a.kind.value,
                "step": a.step,
                "reason_code": a.reason_code,
                "decided_at": a.decided_at.isoformat(),
            }
            for a in proposal.approvals
        ],
        "version": proposal.version,
        "created_at": proposal.created_at.isoformat(),
        "expires_at": proposal.expires_at.isoformat(),
        "confirm_url": confirm_url,
        "confirmation_token": token,
        "confirmation": confirmation,
        "execution": None if execution is None else _execution_fields(execution, receipt),
        "changes_requested": None
        if proposal.changes_requested is None
        else proposal.changes_requested.suggestion,
        "supersedes": proposal.supersedes,
        "next_step": _proposal_next_step(proposal, status, token, execution),
    }


def execution_payload(
    proposal: Proposal,
    execution: Execution,
    receipt: Receipt | None,
    *,
    duplicate: bool,
    signed_receipt: str | None = None,
) -> dict[str, Any]:
    return {
        "kind": "execution",
        "proposal_id": proposal.proposal_id,
        **_execution_fields(execution, receipt),
        "signed_receipt": signed_receipt,
        "duplicate": duplicate,
        "next_step": execution_next_step(proposal.tool, execution.status),
    }


def receipt_payload(receipt: Receipt) -> dict[str, Any]:
    return {
        "execution_id": receipt.execution_id,
        "proposal_id": receipt.proposal_id,
        "action_id": receipt.action_id,
        "request_key": receipt.request_key,
        "operation": receipt.operation,
        "status": receipt.status.value,
        "args_digest": receipt.args_digest,
        "provider_reference": receipt.provider_reference,
        "approvers": list(receipt.approvers),
        "completed_at": None if receipt.completed_at is None else receipt.completed_at.isoformat(),
        "items": [item.to_dict() for item in receipt.items],
    }


def decision_payload(result: DecisionResult) -> dict[str, Any]:
    """The decision receipt (seed 003), as HTTP's ``DecisionView`` has it, without the proposal."""
    return {
        "audit_id": result.audit_id,
        "action_id": result.action_id,
        "status": result.status.value,
        "version": result.version,
        "tool_status": result.tool_status,
        "duplicate": result.duplicate,
    }


def _execution_fields(execution: Execution, receipt: Receipt | None) -> dict[str, Any]:
    return {
        "execution_id": execution.execution_id,
        "status": execution.status.value,
        "attempts": execution.attempts,
        "error_code": execution.error_code,
        "receipt": None if receipt is None else receipt_payload(receipt),
    }


def execution_next_step(tool: str, status: ExecutionStatus) -> str:
    execute = execute_name(tool)
    return {
        ExecutionStatus.SUCCEEDED: (
            f"Done, exactly once. Tell the user, citing the receipt. Do not call {execute} again."
        ),
        ExecutionStatus.FAILED_RETRYABLE: (
            "The provider failed temporarily and nothing was written. You may call "
            f"{execute} again with the same proposal_id and confirmation_token: signoff "
            "retries with the same request key, never as a second operation."
        ),
        ExecutionStatus.FAILED_TERMINAL: (
            "The provider refused and nothing was written. Tell the user; do not retry."
        ),
        ExecutionStatus.UNKNOWN: (
            "The provider's answer was lost: the action may or may not have happened. Never "
            f"make a new proposal for it. Call {STATUS_TOOL} later, or {execute} again with "
            "the same proposal_id and token: signoff then looks the outcome up by its request "
            "key instead of writing again."
        ),
        ExecutionStatus.NEEDS_ATTENTION: (
            "A person must settle this execution. Tell the user; do not retry."
        ),
        ExecutionStatus.PREPARED: (
            f"The action is starting. Do not call {execute} again; call {STATUS_TOOL} later."
        ),
        ExecutionStatus.RUNNING: (
            f"The action is running. Do not call {execute} again; call {STATUS_TOOL} later."
        ),
    }[status]


def _proposal_next_step(
    proposal: Proposal, status: ProposalStatus, token: str | None, execution: Execution | None
) -> str:
    if execution is not None and status not in (ProposalStatus.AWAITING_CONFIRMATION,):
        return execution_next_step(proposal.tool, execution.status)
    request, execute = request_name(proposal.tool), execute_name(proposal.tool)
    if status is ProposalStatus.AWAITING_CONFIRMATION:
        return (
            "Nothing has happened yet. Tell the user that a person must confirm it at "
            f"confirm_url before expires_at; then call {STATUS_TOOL}. Do not make another "
            "proposal for the same thing."
        )
    if status is ProposalStatus.CONFIRMED:
        if token is None:
            return "Confirmed; only the agent that requested it may execute it."
        return f"Confirmed. Call {execute} with this proposal_id and confirmation_token."
    return {
        ProposalStatus.DECLINED: "A person declined it. Tell the user; do not retry or re-propose.",
        ProposalStatus.CHANGES_REQUESTED: (
            "A person asked for changes; nothing was done. Read changes_requested (a note and "
            f"suggested argument values), tell the user, and if they agree call {request} "
            "again with the changed arguments and this proposal_id in signoff_supersedes. "
            "This proposal itself can never be approved."
        ),
        ProposalStatus.CANCELLED: "It was cancelled; nothing will run.",
        ProposalStatus.EXPIRED: (
            f"It expired and nothing was done. If the user still wants it, call {request} again."
        ),
        ProposalStatus.REVOKED: "The confirmation was revoked; nothing will run. Tell the user.",
    }.get(status, f"The action is under way. Call {STATUS_TOOL} later; do not execute again.")


def mandate_payload(state: Any) -> dict[str, Any]:
    """A :class:`signoff.gate._mandate.MandateState` as the agent reads it."""
    m = state.record
    live = m.status == "active"
    return {
        "kind": "mandate",
        "mandate_id": m.mandate_id,
        "status": m.status,
        "tool": m.tool,
        "constraints": m.constraints,
        "approvers": [a.approver for a in m.approvals if a.kind.value == "approve"],
        "remaining_amount_minor": state.remaining_amount_minor,
        "remaining_count": state.remaining_count,
        "expires_at": from_micros(m.expires_at).isoformat(),
        "ended_reason": m.ended_reason,
        "writes": [
            {
                "proposal_id": w.proposal_id,
                "amount_minor": w.amount_minor,
                "currency": w.currency,
                "budget": w.status,
                "proposal_status": w.proposal_status,
            }
            for w in state.writes
        ],
        "next_step": (
            f"Writes of {m.tool} requested with this mandate_id (signoff_mandate_id) within "
            "these limits are confirmed at once; anything else is refused with the limit it hit."
            if live
            else "This standing approval covers nothing now; ask the user."
        ),
    }
