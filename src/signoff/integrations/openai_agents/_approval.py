"""The Agents SDK's ``needs_approval`` mapped onto signoff: only a signoff decision releases.

:class:`SignoffApprovals` gives the model one function tool per write tool,
named after it. When the model calls one, ``needs_approval`` freezes the call
into a signoff proposal and interrupts the run. A person decides on signoff's
page (or any approval surface); :meth:`SignoffApprovals.release` then approves
in the run state the calls signoff confirmed and rejects the ones it declined.
Approving in the SDK alone executes nothing: the tool body runs the write only
when signoff holds a confirmation for that exact proposal, and answers the
proposal's status otherwise. A run state's approvals are not authenticated
(the SDK says so), so they are never taken as consent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunState, Tool
from agents.items import ToolApprovalItem
from agents.tool_context import ToolContext

from signoff import (
    AsyncGate,
    Clarification,
    Principal,
    Proposal,
    ProposalStatus,
    args_digest,
)
from signoff.agents import AgentTools, ConfirmationPages, execute_name, refusal_payload
from signoff.exceptions import SignoffError
from signoff.integrations.openai_agents._identity import PrincipalSource, principal_of

_REFUSED = (
    ProposalStatus.DECLINED,
    ProposalStatus.CHANGES_REQUESTED,
    ProposalStatus.CANCELLED,
    ProposalStatus.EXPIRED,
    ProposalStatus.REVOKED,
)


@dataclass(frozen=True, slots=True)
class Pending:
    """An interrupted tool call and the signoff proposal a person must decide."""

    item: ToolApprovalItem
    proposal: Proposal
    confirm_url: str


class SignoffApprovals:
    """Write tools whose SDK approval is a signoff proposal; see the module docstring."""

    def __init__(
        self,
        gate: AsyncGate,
        principal: PrincipalSource,
        *,
        pages: ConfirmationPages | None = None,
    ) -> None:
        self.gate = gate
        self.principal = principal
        self.pages = pages or ConfirmationPages()
        self._tools = AgentTools(gate.gate, pages=self.pages)
        self._proposals: dict[str, str] = {}
        self._refusals: dict[str, str] = {}

    def tools(self) -> list[Tool]:
        return [self._tool(name) for name in (tool.name for tool in self.gate.catalog)]

    def _tool(self, name: str) -> FunctionTool:
        write_tool = self.gate.catalog.get(name)

        async def needs_approval(
            context: RunContextWrapper[Any], arguments: dict[str, Any], call_id: str
        ) -> bool:
            caller = principal_of(self.principal, context.context)
            try:
                proposal = await self.gate.propose(caller, name, arguments)
            except SignoffError as exc:
                # Nothing to approve: the call will answer this refusal to the model.
                self._refusals[call_id] = _dump(refusal_payload(exc, write_tool=name))
                return False
            self._proposals[call_id] = proposal.proposal_id
            return True

        async def invoke(context: ToolContext[Any], arguments: str) -> str:
            caller = principal_of(self.principal, context.context)
            refusal = self._refusals.pop(context.tool_call_id, None)
            if refusal is not None:
                return refusal
            return await self.gate.run_sync(
                self._execute_if_confirmed, caller, name, context.tool_call_id, arguments
            )

        return FunctionTool(
            name=name,
            description=(
                f"{write_tool.description.rstrip('.')}. A person must confirm exactly this call "
                "in signoff before it runs; until then it does nothing."
            ),
            params_json_schema=self.gate.catalog.schema(name),
            on_invoke_tool=invoke,
            strict_json_schema=True,
            needs_approval=needs_approval,
        )

    def _execute_if_confirmed(
        self, caller: Principal, name: str, call_id: str, arguments: str
    ) -> str:
        proposal = self._proposal(caller, name, call_id, arguments)
        if proposal is None:
            return _dump(
                {
                    "kind": "refusal",
                    "code": "not_confirmed",
                    "message": "no signoff proposal for this call; nothing was done",
                }
            )
        if proposal.status is not ProposalStatus.CONFIRMED:
            # An approval inside the SDK alone: answer the status, perform nothing.
            return self._tools.describe(caller, proposal).json()
        token = self.gate.gate.confirmation_token(caller, proposal.proposal_id)
        execute = {"proposal_id": proposal.proposal_id, "confirmation_token": token}
        return self._tools.call(caller, execute_name(name), execute).json()

    def _proposal(
        self, caller: Principal, name: str, call_id: str, arguments: str
    ) -> Proposal | None:
        """This call's proposal: remembered, or found again by digest after a restart."""
        known = self._proposals.get(call_id)
        if known is not None:
            return self.gate.gate.proposal(caller, known)
        digest = _digest(self.gate, caller, name, arguments)
        if digest is None:
            return None
        for proposal in self.gate.gate.proposals(caller, limit=500):
            if (proposal.tool, proposal.args_digest) == (name, digest) and (
                proposal.requester_subject,
                proposal.requester_actor,
            ) == (caller.subject, caller.actor):
                self._proposals[call_id] = proposal.proposal_id
                return proposal
        return None

    async def pending(self, state: RunState[Any], context: Any = None) -> list[Pending]:
        """The interrupted calls of ``state`` with their proposals, for showing the person."""
        found = []
        for item in state.get_interruptions():
            proposal = await self._proposal_for(item, context)
            if proposal is not None:
                url = self.pages.url(proposal.proposal_id)
                found.append(Pending(item, proposal, url))
        return found

    async def release(self, state: RunState[Any], context: Any = None) -> list[Pending]:
        """Approve what signoff confirmed, reject what it refused; return what still waits."""
        waiting = []
        for pending in await self.pending(state, context):
            status = pending.proposal.status
            if status is ProposalStatus.CONFIRMED:
                state.approve(pending.item)
            elif status in _REFUSED:
                state.reject(
                    pending.item,
                    rejection_message=f"signoff: the proposal {pending.proposal.proposal_id} "
                    f"was {status.value}; nothing was done",
                )
            else:
                waiting.append(pending)
        return waiting

    async def _proposal_for(self, item: ToolApprovalItem, context: Any) -> Proposal | None:
        raw = item.raw_item
        call_id = raw.get("call_id") if isinstance(raw, Mapping) else getattr(raw, "call_id", None)
        if not isinstance(call_id, str) or item.name is None:
            return None
        caller = principal_of(self.principal, context)
        return await self.gate.run_sync(
            self._proposal, caller, item.name, call_id, item.arguments or "{}"
        )


def _digest(gate: AsyncGate, caller: Principal, name: str, arguments: str) -> str | None:
    tool = gate.catalog.get(name)
    try:
        normalized = tool.normalize(tool.parse(arguments), caller)
    except SignoffError:
        return None
    if isinstance(normalized, Clarification):
        return None
    return args_digest(tool.name, tool.version, tool.canonical(normalized))


def _dump(payload: dict[str, Any]) -> str:
    import json

    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
