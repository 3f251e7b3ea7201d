"""/v1/inbox: every proposal the caller may decide, oldest deadline first, a page at a time."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Query

from signoff._clock import from_micros, to_micros
from signoff.exceptions import InvalidRequest
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._views import InboxView, ProposalView

router = APIRouter(prefix="/v1/inbox", tags=["proposals"])
MAX_ID = 128
# The largest instant a datetime holds is 9999-12-31: at most 18 digits of microseconds.
_MICROS = re.compile(r"[0-9]{1,18}")
AFTER_PATTERN = r"^[0-9]{1,18}\.[\s\S]{1,128}$"


@router.get(
    "",
    operation_id="getInbox",
    response_model=InboxView,
    responses=problems(400, 401),
    summary="Proposals awaiting a decision the caller may take, oldest deadline first",
)
async def inbox(
    caller: Caller,
    state: State,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    after: Annotated[
        str | None,
        Query(
            max_length=160,
            pattern=AFTER_PATTERN,
            description="next_after of a page: `<deadline in µs since the epoch>.<proposal_id>`",
        ),
    ] = None,
) -> InboxView:
    """People only (an agent's inbox is empty): the role they hold now, or their own
    confirmation, decides what is listed; bulk proposals cannot hide older ones."""
    page = await state.agate.inbox(caller, after=_cursor(after), limit=limit + 1)
    more = page[limit - 1] if len(page) > limit else None
    return InboxView(
        proposals=[ProposalView.of(p) for p in page[:limit]],
        next_after=None if more is None else f"{to_micros(more.expires_at)}.{more.proposal_id}",
    )


def _cursor(after: str | None) -> tuple[datetime, str] | None:
    if after is None:
        return None
    micros, _, proposal_id = after.partition(".")
    try:  # ASCII digits only ("²" is a digit to str.isdigit), and a representable instant
        if not _MICROS.fullmatch(micros) or not 0 < len(proposal_id) <= MAX_ID:
            raise ValueError(after)
        return from_micros(int(micros)), proposal_id
    except (ValueError, OverflowError):
        raise InvalidRequest("after must be the next_after value of a previous page") from None
