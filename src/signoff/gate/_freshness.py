"""Is the business state still the one the person saw? Asked before approving and executing.

The seed's ``Fresh(p, s)``: a token is issued, and a write starts, only while
the state the preview showed still holds. The tool's read step may also refuse
outright (the order is gone, nothing is left to refund); either way the state
moved, so the answer is ``state_changed`` with the tool's reason, never a
complaint about arguments that were valid when proposed.
"""

from __future__ import annotations

from typing import Any

from signoff._model import Principal, Proposal
from signoff.catalog._types import ResourceState
from signoff.exceptions import ArgsMismatch, Refusal, StateChanged
from signoff.gate._context import GateContext
from signoff.gate._policy import confirmed


def requester_of(proposal: Proposal) -> Principal:
    """The requester as the read step saw them at proposal time, roles included.

    Approving reads the state again on the requester's behalf (the approver may not be
    entitled to read it): support staff who asked for a customer's refund through their
    role must be read as support staff again, or every such request would look
    ``state_changed``. Proposals stored before the roles were kept read with none.
    """
    roles = proposal.state.get("requester_roles") or ()
    return Principal(
        proposal.requester_subject,
        proposal.tenant,
        roles=frozenset(str(role) for role in roles),
        actor=proposal.requester_actor,
    )


def check_fresh(
    ctx: GateContext, proposal: Proposal, principal: Principal | None = None, args: Any = None
) -> ResourceState:
    """Read the state again (outside any transaction); refuse if it moved since the preview.

    ``args``: the proposal's arguments already loaded (``tool.load``), if the caller has them.
    The tool reads as ``principal`` (else the requester) with the roles the directory
    grants *now*, never merely the ones a token or the proposal claims.
    """
    tool = ctx.catalog.get(proposal.tool)
    if args is None:
        args = tool.load(proposal.arguments)
    try:
        reader = confirmed(principal or requester_of(proposal), ctx.directory)
        state = tool.read_state(args, reader)
    except Refusal as exc:
        raise StateChanged(
            f"the business state changed since the preview: {exc.message}",
            proposal_id=proposal.proposal_id,
            cause=exc.code,
        ) from None
    if state.resource_id != proposal.resource_id:
        raise ArgsMismatch("the target resource changed", proposal_id=proposal.proposal_id)
    if state.version != proposal.state_version:
        raise StateChanged(
            "the business state changed since the preview; make a new proposal",
            proposal_id=proposal.proposal_id,
            previewed_version=proposal.state_version,
            current_version=state.version,
        )
    return state
