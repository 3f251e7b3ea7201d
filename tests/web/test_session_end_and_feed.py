"""Issue 23: signing out ends the session on the server; the live feed keeps to the circle.

A copied cookie decided a proposal after its owner signed out: the session was only a
signed cookie. And `/ui/events` streamed the kind and seq of every notifiable event of
the tenant to anyone signed in (a person with no role got 44 of them).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.notify._feed import events_after
from signoff.web._live import _circle
from tests.redteam import STORES, serve
from tests.web.conftest import BASE, hidden_fields


@pytest.mark.parametrize("store", STORES)
def test_a_copied_cookie_is_dead_after_sign_out(store: str, tmp_path: Path) -> None:
    with serve(store, tmp_path) as served:
        proposal = served.proposed()
        assert served.sign_in_demo("alice").status_code == 303
        page = served.client.get(f"/ui/proposals/{proposal['proposal_id']}").text
        form = {**hidden_fields(page, "approve"), "decision": "approve"}
        cookies = dict(served.client.cookies)
        out = served.client.post(
            "/ui/sign-out", data=hidden_fields(page, "sign-out"), follow_redirects=False
        )
        assert out.status_code == 303
        with TestClient(served.client.app, base_url=BASE, cookies=cookies) as thief:
            inbox = thief.get("/ui/inbox", follow_redirects=False)
            assert inbox.status_code == 303 and "/ui/sign-in" in inbox.headers["location"]
            decided = thief.post(
                f"/ui/proposals/{proposal['proposal_id']}/decision",
                data=form,
                follow_redirects=False,
            )
            assert decided.status_code in (303, 403)
            assert "/ui/proposals" not in decided.headers.get("location", "")
        assert served.audit("decision.approved") == []
        assert (
            served.state.gate.proposal(
                Principal("olga", "acme", frozenset({"auditor"})), proposal["proposal_id"]
            ).version
            == 1
        )


@pytest.mark.parametrize("store", STORES)
def test_the_live_feed_shows_only_proposals_in_the_persons_circle(
    store: str, tmp_path: Path
) -> None:
    with serve(store, tmp_path) as served:
        first, second = served.proposed(), served.proposed(order_id="ord_1002")
        gate, store_ = served.state.gate, served.state.gate.store
        nobody = Principal("carol", "acme")
        _, feed = events_after(store_, "acme", 0, may_see=_circle(gate, nobody))
        assert feed == []
        alice = Principal("alice", "acme", frozenset({"refund_approver"}), client="page")
        _, feed = events_after(store_, "acme", 0, may_see=_circle(gate, alice))
        assert [e.event_type for e in feed] == ["proposal.awaiting_confirmation"] * 2
        customer = Principal("u_42", "acme")
        served.state.gate.cancel(
            Principal("u_42", "acme", actor="agent:support-bot"), second["proposal_id"]
        )
        _, feed = events_after(store_, "acme", 0, may_see=_circle(gate, customer))
        assert len(feed) == 3  # both requests and the cancellation are the customer's
        assert first["proposal_id"] != second["proposal_id"]
