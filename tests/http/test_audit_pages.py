"""Issue 23: `/v1/audit` is read a page at a time, with a cursor like `/v1/inbox`.

It answered the whole chain at once. Pages follow chain order; `next_after` leads to the
next one and is null on the last; together they are the chain, each event once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from signoff import Principal
from signoff.client import SignoffClient
from tests.http.conftest import assert_problem
from tests.redteam import STORES, serve

AUDREY = Principal("audrey", "acme", frozenset({"auditor"}))


@pytest.mark.parametrize("store", STORES)
def test_the_audit_log_pages_in_chain_order(store: str, tmp_path: Path) -> None:
    with serve(store, tmp_path) as served:
        for n in range(5):
            served.proposed(order_id=f"ord_10{10 + n}")
        whole = [e.seq for e in served.audit()]
        assert len(whole) == 5
        seen: list[int] = []
        after: int | None = 0
        while after is not None:
            page = served.client.get(
                f"/v1/audit?limit=2&after={after}", headers=served.auth(AUDREY)
            ).json()
            assert len(page["events"]) <= 2
            seen += [e["seq"] for e in page["events"]]
            after = page["next_after"]
        assert seen == whole
        for bad in ("limit=0", "limit=201", "after=-1", "after=99999999999999999999"):
            response = served.client.get(f"/v1/audit?{bad}", headers=served.auth(AUDREY))
            assert_problem(response, 400, "invalid_request")
        # The in-process app through its TestClient (an httpx client of the same shape).
        http: Any = served.client
        client = SignoffClient("http://testserver", token=served.token(AUDREY), http=http)
        assert [e.seq for e in client.audit()] == whole
