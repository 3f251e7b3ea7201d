"""Approve or reject several proposals from the inbox: each decided on its own by the gate.

The form carries, per selected proposal, the version the person saw
(``select.<proposal id>=<version>``), the decision and, to reject, a reason
code; the batch's idempotency key was generated when the inbox was drawn, so a
double submit replays every item. The answer lists what happened to each.
"""

from __future__ import annotations

import re

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from signoff._model import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import InvalidRequest, SignoffError
from signoff.gate._batch import BatchItem, BatchOutcome, batch_blocker
from signoff.web._forms import Form, posted_form
from signoff.web._refusals import refusal_page
from signoff.web._ui import PREFIX, Ui

router = APIRouter(prefix=PREFIX, include_in_schema=False)
SELECT = "select."
_KEY = re.compile(r"^ui_[0-9a-f]{32}$")
_VERSION = re.compile(r"^[1-9][0-9]{0,9}$")
_REASON = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def alone(proposals: list[Proposal]) -> dict[str, str]:
    """Proposals whose approval must be made on their own page, and why."""
    found = {}
    for p in proposals:
        reason = batch_blocker(p, DecisionKind.APPROVE)
        if reason is not None:
            found[p.proposal_id] = reason
    return found


@router.post("/decisions")
async def decide_selected(request: Request) -> Response:
    form = await posted_form(request)
    if isinstance(form, Response):
        return form
    ui, session, fields = form
    principal = session.principal
    if principal is None:
        return RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
    try:
        items, key = parse_batch(fields)
        outcomes = await run_in_threadpool(
            ui.app_state.gate.decide_batch, principal, items, idempotency_key=key
        )
        context = {"items": await run_in_threadpool(_rows, ui, principal, outcomes)}
    except SignoffError as exc:
        return refusal_page(ui, session, exc)
    return ui.render("batch.html", session, context)


def parse_batch(fields: Form) -> tuple[list[BatchItem], str]:
    key = fields.get("idempotency_key", "")
    kind = fields.get("decision")
    if not _KEY.match(key) or kind not in ("approve", "reject"):
        raise InvalidRequest("the form is incomplete; reload the inbox and decide again")
    code = fields.get("reason_code") or None
    if kind == "reject" and (code is None or not _REASON.match(code)):
        raise InvalidRequest("choose a reason to reject the selected proposals")
    items = []
    for name, version in fields.items():
        if not name.startswith(SELECT):
            continue
        if not _VERSION.match(version):
            raise InvalidRequest("the form is incomplete; reload the inbox and decide again")
        decision = Decision(DecisionKind(kind), int(version), code if kind == "reject" else None)
        items.append(BatchItem(name.removeprefix(SELECT)[:128], decision))
    if not items:
        raise InvalidRequest("select at least one proposal")
    return items, key


def _rows(ui: Ui, principal: Principal, outcomes: list[BatchOutcome]) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for outcome in outcomes:
        if outcome.result is not None:
            proposal = outcome.result.proposal
            rows.append(
                {
                    "proposal_id": proposal.proposal_id,
                    "title": proposal.preview.title,
                    "decided": True,
                    "status": proposal.status.value,
                    "duplicate": outcome.result.duplicate,
                }
            )
            continue
        assert outcome.refusal is not None
        try:
            title = ui.app_state.gate.proposal(principal, outcome.proposal_id).preview.title
        except SignoffError:
            title = outcome.proposal_id
        rows.append(
            {
                "proposal_id": outcome.proposal_id,
                "title": title,
                "decided": False,
                "message": outcome.refusal.message,
                "code": outcome.refusal.code,
            }
        )
    return rows
