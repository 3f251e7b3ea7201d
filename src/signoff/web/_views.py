"""What a person sees about a proposal, read from the gate: entitlement, state now, outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from signoff._model import DecisionKind, Execution, Principal, Proposal, ProposalStatus, Receipt
from signoff.exceptions import Forbidden, Refusal
from signoff.gate._gate import Gate
from signoff.gate._policy import decision_step
from signoff.store._sql import Assignment


@dataclass(frozen=True, slots=True)
class Entitlement:
    """Which decision forms this person gets; ``why_not`` says why there are none."""

    may_approve: bool
    may_reject: bool
    why_not: str | None = None

    @property
    def may_decide(self) -> bool:
        return self.may_approve or self.may_reject


def entitlement(
    proposal: Proposal, principal: Principal, assignment: Assignment | None = None
) -> Entitlement:
    """The tool's policy decides (with whom an escalation or reassignment added); the gate
    checks again (with its role directory) on submit."""
    if proposal.status is not ProposalStatus.AWAITING_CONFIRMATION:
        return Entitlement(False, False, f"This proposal is {proposal.status.value}.")
    refusals: list[str] = []
    allowed = {}
    for kind in DecisionKind:
        try:
            decision_step(proposal, principal, kind, None, assignment)
            allowed[kind] = True
        except Forbidden as exc:
            allowed[kind] = False
            refusals.append(exc.message)
    why_not = None if any(allowed.values()) else refusals[0]
    return Entitlement(allowed[DecisionKind.APPROVE], allowed[DecisionKind.REJECT], why_not)


@dataclass(frozen=True, slots=True)
class StateRow:
    name: str
    then: Any
    now: Any

    @property
    def changed(self) -> bool:
        return bool(self.then != self.now)


@dataclass(frozen=True, slots=True)
class CurrentState:
    """The business state read now beside the one read when the agent proposed."""

    rows: Sequence[StateRow]
    version_then: str
    version_now: str | None
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and (
            self.version_now != self.version_then or any(r.changed for r in self.rows)
        )


def current_state(gate: Gate, proposal: Proposal) -> CurrentState:
    """Ask the tool again, as the requester (the roles they had are not stored)."""
    then: dict[str, Any] = dict(proposal.state.get("summary") or {})
    tool = gate.catalog.get(proposal.tool)
    requester = Principal(
        proposal.requester_subject, proposal.tenant, actor=proposal.requester_actor
    )
    try:
        state = tool.read_state(tool.load(proposal.arguments), requester)
    except Refusal as exc:
        rows = [StateRow(k, v, None) for k, v in then.items()]
        return CurrentState(rows, proposal.state_version, None, error=exc.message)
    names = list(then) + [k for k in state.summary if k not in then]
    rows = [StateRow(k, then.get(k), state.summary.get(k)) for k in names]
    return CurrentState(rows, proposal.state_version, state.version)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The execution the agent ran after the decision, and its receipt once terminal."""

    execution: Execution | None
    receipt: Receipt | None
    signed: bool = False
    """The deployment signs receipts: the page offers the signed one as a download."""


def outcome(gate: Gate, principal: Principal, proposal: Proposal) -> Outcome:
    execution = gate.execution_for(principal, proposal.proposal_id)
    if execution is None:
        return Outcome(None, None)
    receipt = (
        gate.receipt(principal, execution.execution_id) if execution.status.is_terminal else None
    )
    return Outcome(execution, receipt, gate.proof is not None)
