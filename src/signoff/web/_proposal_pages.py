"""The pages a person reads: inbox, proposal detail, result (with the receipt), history."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from signoff._model import Principal, Proposal, ProposalStatus
from signoff.exceptions import NotFound, SignoffError
from signoff.notify._feed import head
from signoff.web._refusals import refusal_page
from signoff.web._ui import PREFIX, Ui, new_idempotency_key, signed_in
from signoff.web._views import current_state, entitlement, outcome

router = APIRouter(prefix=PREFIX, include_in_schema=False)
MAX_ID = 128
LIST_LIMIT = 200
DECIDED = [s for s in ProposalStatus if s is not ProposalStatus.AWAITING_CONFIRMATION]


@router.get("/inbox")
def inbox(request: Request) -> Response:
    """Proposals awaiting a decision this person may take, newest first."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    now = ui.now()
    # Read before the list: the live inbox (_live) streams every change after this point.
    live_after = head(ui.app_state.gate.store, principal.tenant)
    waiting = ui.app_state.gate.proposals(
        principal, statuses=[ProposalStatus.AWAITING_CONFIRMATION], limit=LIST_LIMIT
    )
    mine = [p for p in waiting if now < p.expires_at and entitlement(p, principal).may_decide]
    return ui.render("inbox.html", session, {"proposals": mine, "live_after": live_after})


@router.get("/history")
def history(request: Request) -> Response:
    """Decided proposals of this person's tenant, newest first."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    decided = ui.app_state.gate.proposals(principal, statuses=DECIDED, limit=LIST_LIMIT)
    return ui.render("history.html", session, {"proposals": decided})


@router.get("/proposals/{proposal_id}")
def detail(request: Request, proposal_id: str) -> Response:
    """Everything a person needs to decide, and the decision forms they are entitled to."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    try:
        proposal = load(ui, principal, proposal_id)
        context = detail_context(ui, principal, proposal)
    except SignoffError as exc:
        return refusal_page(ui, session, exc, proposal_id=proposal_id)
    return ui.render("detail.html", session, context)


@router.get("/proposals/{proposal_id}/result")
def result(request: Request, proposal_id: str, repeat: str | None = None) -> Response:
    """The decision, then — once the agent has run it — the execution and its receipt."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    try:
        proposal = load(ui, principal, proposal_id)
        done = outcome(ui.app_state.gate, principal, proposal)
    except SignoffError as exc:
        return refusal_page(ui, session, exc, proposal_id=proposal_id)
    context = {"p": proposal, "outcome": done, "repeat": repeat == "1"}
    return ui.render("result.html", session, context)


def load(ui: Ui, principal: Principal, proposal_id: str) -> Proposal:
    if not 0 < len(proposal_id) <= MAX_ID:
        raise NotFound("no such proposal", proposal_id=proposal_id[:MAX_ID])
    return ui.app_state.gate.proposal(principal, proposal_id)


def detail_context(
    ui: Ui, principal: Principal, proposal: Proposal, *, retype_error: str | None = None
) -> dict[str, Any]:
    gate = ui.app_state.gate
    awaiting = proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    tool = gate.catalog.get(proposal.tool)
    return {
        "p": proposal,
        "entitled": entitlement(proposal, principal),
        "state_now": current_state(gate, proposal) if tool.reads_state() else None,
        "outcome": None if awaiting else outcome(gate, principal, proposal),
        "retype": [(name, _label(proposal, name)) for name in _retype(proposal)],
        "retype_error": retype_error,
        "idempotency_key": new_idempotency_key(),
        "reasons": tool.reasons(),
        "units": [f for f in proposal.preview.fields if f.unit],
        "approve_label": approve_label(proposal),
    }


def approve_label(proposal: Proposal) -> str:
    """The button restates the amount: the display value of the first field with a unit."""
    counted = next((f for f in proposal.preview.fields if f.unit), None)
    return "Approve" if counted is None else f"Approve {counted.display_value}"


def _retype(proposal: Proposal) -> list[str]:
    return [str(name) for name in proposal.policy.get("retype") or []]


def _label(proposal: Proposal, name: str) -> str:
    shown = proposal.preview.field(name)
    return name if shown is None else shown.label
