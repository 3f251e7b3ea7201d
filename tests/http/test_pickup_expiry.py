"""Issue 23: after the confirmation expired, picking its token up is 409 token_expired.

It answered 200 with the expired token, which execute would then refuse.
"""

from __future__ import annotations

from datetime import timedelta

from tests.conftest import AGENT
from tests.http.conftest import Api, assert_problem, auth


def test_an_expired_confirmation_is_not_handed_out(api: Api) -> None:
    proposal = api.propose()
    token = api.approve(proposal)  # picked up once, while valid
    path = f"/v1/proposals/{proposal['proposal_id']}/confirmation-token"
    api.world.clock.advance(timedelta(days=1))
    body = assert_problem(api.client.get(path, headers=auth(AGENT)), 409, "token_expired")
    assert body["proposal_id"] == proposal["proposal_id"]
    assert_problem(api.execute(proposal["proposal_id"], token), 409, "token_expired")
    assert api.world.ledger_amounts() == []
