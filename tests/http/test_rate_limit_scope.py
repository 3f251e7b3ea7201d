"""Issue 23: the proposal rate limit counts per (tenant, person, agent).

It counted per agent id: one person's agent exhausted another person's, and an agent
named `alice` shared the person alice's counter. Checked over HTTP, with the in-process
window and with `limits`' own storage, by the proposals the store kept.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Principal
from tests.conftest import REFUND
from tests.http.conftest import assert_problem
from tests.redteam import serve

BOT_FOR_U42 = Principal("u_42", "acme", actor="agent:support-bot")
BOT_FOR_U77 = Principal("u_77", "acme", actor="agent:support-bot")
ALICE = Principal("alice", "acme", frozenset({"support"}))
AGENT_NAMED_ALICE = Principal("u_42", "acme", actor="alice")


@pytest.mark.parametrize("window", ["in-process", "limits"])
def test_each_person_and_agent_has_its_own_budget(window: str, tmp_path: Path) -> None:
    with serve("sqlite", tmp_path, proposal_rate_limit="2/minute") as served:
        if window == "limits":
            # The same limiter through `limits`' own storage (what redis:// would use).
            from limits.storage import storage_from_string
            from limits.strategies import MovingWindowRateLimiter

            limiter = served.state.rate_limit
            assert limiter is not None
            limiter._local = None
            limiter._limiter = MovingWindowRateLimiter(storage_from_string("memory://"))
        for _ in range(2):
            assert served.propose("refund_order", BOT_FOR_U42).status_code == 201
        assert_problem(served.propose("refund_order", BOT_FOR_U42), 429, "rate_limited")
        # u_77's agent of the same name, the person alice and an agent named alice go on.
        assert served.state.demo is not None
        served.state.demo.shop.add_order("acme", "ord_7701", owner="u_77", payable=19900)
        ok = served.propose("refund_order", BOT_FOR_U77, **{**REFUND, "order_id": "ord_7701"})
        assert ok.status_code == 201, ok.text
        assert served.propose("refund_order", ALICE).status_code == 201
        assert served.propose("refund_order", AGENT_NAMED_ALICE).status_code == 201
        assert_problem(served.propose("refund_order", BOT_FOR_U42), 429, "rate_limited")
        assert len(served.audit("proposal.created")) == 5
