"""A LangGraph write step: propose, ``interrupt()`` with the proposal, run only when confirmed.

:class:`SignoffWrite` adds two nodes to a ``StateGraph``. ``<name>_propose``
freezes the arguments into a signoff proposal and stores its id in the graph
state (so the checkpoint holds it and a re-run never proposes twice).
``<name>_confirm`` reads the proposal from signoff: awaiting → ``interrupt()``
with the proposal as payload; confirmed → execute once, with the token bound
to the requesting agent; anything else → the proposal's answer. Whatever value
the graph is resumed with is never taken as consent: the node reads signoff
again, and interrupts again while no person has confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from langgraph.graph import StateGraph
from langgraph.types import interrupt

from signoff import Gate, Principal, Proposal, ProposalStatus
from signoff.agents import AgentTools, ConfirmationPages, execute_name

State = Mapping[str, Any]
_WAITING = frozenset({ProposalStatus.AWAITING_CONFIRMATION})


class SignoffWrite:
    """One confirmed write as two graph nodes; results land in ``state[result_key]``.

    ``principal(state)`` names the caller (from your authenticated session, not
    from the model); ``arguments(state)`` the tool's raw arguments.
    """

    def __init__(
        self,
        gate: Gate,
        tool: str,
        *,
        principal: Principal | Callable[[State], Principal],
        arguments: Callable[[State], Mapping[str, Any]],
        proposal_key: str = "proposal_id",
        result_key: str = "signoff_result",
        pages: ConfirmationPages | None = None,
    ) -> None:
        gate.catalog.get(tool)  # an unknown tool fails here, not mid-graph
        self.gate, self.tool = gate, tool
        self._principal, self._arguments = principal, arguments
        self.proposal_key, self.result_key = proposal_key, result_key
        self._tools = AgentTools(gate, pages=pages)

    def add_to(self, graph: StateGraph[Any], name: str) -> tuple[str, str]:
        """Add ``<name>_propose`` → ``<name>_confirm``; returns both names to wire around."""
        propose, confirm = f"{name}_propose", f"{name}_confirm"
        # Nodes take any mapping-shaped state (TypedDict, dict); LangGraph's bound is narrower.
        graph.add_node(propose, cast(Any, self.propose))
        graph.add_node(confirm, cast(Any, self.confirm))
        graph.add_edge(propose, confirm)
        return propose, confirm

    def principal(self, state: State) -> Principal:
        principal = self._principal
        return principal if isinstance(principal, Principal) else principal(state)

    def propose(self, state: State) -> dict[str, Any]:
        """Create the proposal once; a refusal (bad arguments, clarification) is the result."""
        if state.get(self.proposal_key):
            return {}
        output = self._tools.request(self.principal(state), self.tool, self._arguments(state))
        if output.proposal is None:
            return {self.result_key: output.payload}
        return {self.proposal_key: output.proposal.proposal_id}

    def confirm(self, state: State) -> dict[str, Any]:
        """Interrupt until signoff holds a decision; execute a confirmed proposal once."""
        proposal_id = state.get(self.proposal_key)
        if not proposal_id or state.get(self.result_key) is not None:
            return {}
        caller = self.principal(state)
        while True:
            proposal = self.gate.proposal(caller, proposal_id)
            if proposal.status not in _WAITING or self._past_deadline(proposal):
                return {self.result_key: self._settle(caller, proposal)}
            interrupt(self._tools.describe(caller, proposal).payload)

    def _past_deadline(self, proposal: Proposal) -> bool:
        return self.gate.clock.now() >= proposal.expires_at

    def _settle(self, caller: Principal, proposal: Proposal) -> dict[str, Any]:
        if proposal.status is ProposalStatus.CONFIRMED:
            token = self.gate.confirmation_token(caller, proposal.proposal_id)
            arguments = {"proposal_id": proposal.proposal_id, "confirmation_token": token}
            return self._tools.call(caller, execute_name(self.tool), arguments).payload
        # Declined, expired, revoked — or executed already (a re-run after a crash): say so.
        return self._tools.describe(caller, proposal).payload
