"""Receipts: what an execution proves, built from the records alone."""

from __future__ import annotations

from signoff._model import Execution, ExecutionResult, Proposal, Receipt
from signoff.gate._context import approvers


def receipt_for(proposal: Proposal, execution: Execution) -> Receipt:
    return Receipt(
        execution_id=execution.execution_id,
        proposal_id=proposal.proposal_id,
        action_id=proposal.action_id,
        request_key=execution.request_key,
        operation=proposal.tool,
        status=execution.status,
        args_digest=proposal.args_digest,
        provider_reference=execution.provider_reference,
        approvers=approvers(proposal),
        completed_at=execution.updated_at if execution.status.is_terminal else None,
        on_behalf_of=tuple(
            (a.approver, a.delegate_of) for a in proposal.approvals if a.delegate_of is not None
        ),
        items=execution.items,
        mandate=proposal.mandate,
    )


def result_for(proposal: Proposal, execution: Execution, *, duplicate: bool) -> ExecutionResult:
    receipt = receipt_for(proposal, execution) if execution.status.is_terminal else None
    return ExecutionResult(execution=execution, receipt=receipt, duplicate=duplicate)
