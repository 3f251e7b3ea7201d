"""The pages a person reads: inbox, proposal detail, result (with the receipt), history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import Response

from signoff._clock import from_micros, to_micros
from signoff._model import Principal, Proposal, ProposalStatus
from signoff.exceptions import NotFound, SignoffError
from signoff.notify._feed import head
from signoff.web._passkeys import device_context
from signoff.web._refusals import refusal_page
from signoff.web._ui import PREFIX, Ui, new_idempotency_key, signed_in
from signoff.web._views import current_state, entitlement, outcome

router = APIRouter(prefix=PREFIX, include_in_schema=False)
MAX_ID = 128
LIST_LIMIT = 200
INBOX_PAGE = 50
STATE_MATTERS = (ProposalStatus.AWAITING_CONFIRMATION, ProposalStatus.CONFIRMED)
DECIDED = [s for s in ProposalStatus if s is not ProposalStatus.AWAITING_CONFIRMATION]


@router.get("/inbox")
def inbox(request: Request, after: str | None = None) -> Response:
    """Every proposal this person may decide, oldest deadline first, a page at a time.

    Selected by the store (role, requester, not yet decided by them), so proposals
    an agent files in bulk cannot push an older pending one off the page.
    """
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    # Read before the list: the live inbox (_live) streams every change after this point.
    live_after = head(ui.app_state.gate.store, principal.tenant)
    page = ui.app_state.gate.inbox(principal, after=_cursor(after), limit=INBOX_PAGE + 1)
    gate = ui.app_state.gate
    shown = [
        p for p in page[:INBOX_PAGE] if entitlement(p, principal, gate.assignment(p)).may_decide
    ]
    more = page[INBOX_PAGE - 1] if len(page) > INBOX_PAGE else None
    next_page = None if more is None else f"{to_micros(more.expires_at)}.{more.proposal_id}"
    from signoff.catalog._tool import REASON_LABELS
    from signoff.web._batch import alone

    return ui.render(
        "inbox.html",
        session,
        {
            "proposals": shown,
            "next_page": next_page,
            "live_after": live_after,
            "alone": alone(shown),
            "idempotency_key": new_idempotency_key(),
            "batch_reasons": list(REASON_LABELS.items()),
        },
    )


def _cursor(after: str | None) -> tuple[datetime, str] | None:
    """``<expires_at micros>.<proposal id>`` of the previous page's last proposal."""
    if after is None:
        return None
    micros, _, proposal_id = after.partition(".")
    if not micros.isdigit() or not 0 < len(proposal_id) <= MAX_ID or len(micros) > 20:
        return None
    return from_micros(int(micros)), proposal_id


@router.get("/history")
def history(request: Request) -> Response:
    """Decided proposals this person may see (their circle), newest first."""
    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    decided = ui.app_state.gate.proposals(principal, statuses=DECIDED, limit=LIST_LIMIT)
    return ui.render("history.html", session, {"proposals": decided})


@router.get("/executions/{execution_id}/receipt")
def receipt_download(request: Request, execution_id: str) -> Response:
    """The signed receipt as a file the person keeps (``signoff audit verify --receipt``)."""
    from signoff.http._executions import receipt_response

    who = signed_in(request)
    if isinstance(who, Response):
        return who
    ui, session, principal = who
    try:
        if not 0 < len(execution_id) <= MAX_ID:
            raise NotFound("no such execution", execution_id=execution_id[:MAX_ID])
        document = ui.app_state.gate.receipt_file(principal, execution_id)
    except SignoffError as exc:
        return refusal_page(ui, session, exc)
    return receipt_response(document, execution_id)


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
        context.update(device_context(ui, request, session, principal, proposal))
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
    ui: Ui,
    principal: Principal,
    proposal: Proposal,
    *,
    retype_error: str | None = None,
    retype_field: str | None = None,
) -> dict[str, Any]:
    """What detail.html shows; a re-type mismatch is said at ``retype_field`` (else the first)."""
    gate = ui.app_state.gate
    awaiting = proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    tool = gate.catalog.get(proposal.tool)
    retyped = _retype(proposal)
    return {
        "p": proposal,
        "entitled": entitlement(proposal, principal, gate.assignment(proposal)),
        # Only a decision still to come (or a token still to use) depends on the state now.
        "state_now": current_state(gate, proposal)
        if tool.reads_state() and proposal.status in STATE_MATTERS
        else None,
        "reads_state": tool.reads_state(),
        "side_effect": tool.side_effect.value,
        "outcome": None if awaiting else outcome(gate, principal, proposal),
        "retype": [(name, _label(proposal, name)) for name in retyped],
        "retype_error": retype_error,
        "retype_error_field": retype_field
        if retype_field in retyped
        else next(iter(retyped), None),
        "idempotency_key": new_idempotency_key(),
        "reasons": tool.reasons(),
        "units": [f for f in proposal.preview.fields if f.unit],
        "approve_label": approve_label(proposal),
        "approve_amount": approve_amount(proposal),
        "device": None,  # a device-signed approval's options: ``_passkeys.device_context``
        "replaced": replaced(ui, principal, proposal),
    }


def replaced(ui: Ui, principal: Principal, proposal: Proposal) -> dict[str, Any] | None:
    """What changed from the proposal this one supersedes, and what its reviewer suggested."""
    if proposal.supersedes is None:
        return None
    try:
        old = ui.app_state.gate.proposal(principal, proposal.supersedes)
    except SignoffError:
        return {"proposal_id": proposal.supersedes, "rows": [], "suggestion": None, "seen": False}
    names = list(old.arguments) + [k for k in proposal.arguments if k not in old.arguments]
    rows = [
        (name, old.arguments.get(name), proposal.arguments.get(name))
        for name in names
        if old.arguments.get(name) != proposal.arguments.get(name)
    ]
    returned = old.changes_requested
    return {
        "proposal_id": old.proposal_id,
        "rows": rows,
        "suggestion": None if returned is None else returned.suggestion,
        "by": None if returned is None else returned.approver,
        "seen": True,
    }


def approve_label(proposal: Proposal) -> str:
    """The button restates the amount: the display value of the first field with a unit."""
    amount = approve_amount(proposal)
    return "Approve" if amount is None else f"Approve {amount}"


def approve_amount(proposal: Proposal) -> str | None:
    counted = next((f for f in proposal.preview.fields if f.unit), None)
    return None if counted is None else counted.display_value


def _retype(proposal: Proposal) -> list[str]:
    return [str(name) for name in proposal.policy.get("retype") or []]


def _label(proposal: Proposal, name: str) -> str:
    shown = proposal.preview.field(name)
    return name if shown is None else shown.label
