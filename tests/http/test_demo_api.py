"""Demo-only endpoints: the order row and the provider ledger, per tenant."""

from __future__ import annotations

from tests.conftest import AGENT, OTHER_TENANT
from tests.http.conftest import Api, assert_problem, auth


def test_order_and_ledger_show_the_refund(api: Api) -> None:
    """After a flow, the order is refunded and the ledger holds one entry."""
    before = api.client.get("/v1/demo/orders/ord_1001", headers=auth(AGENT)).json()
    assert before["refunded_minor"] == 0
    assert before["payable_minor"] == 19900
    proposal = api.propose()
    api.execute(proposal["proposal_id"], api.approve(proposal))
    after = api.client.get("/v1/demo/orders/ord_1001", headers=auth(AGENT)).json()
    assert after["refunded_minor"] == 19900
    assert after["version"] == before["version"] + 1
    ledger = api.client.get("/v1/demo/provider/ledger", headers=auth(AGENT)).json()["entries"]
    assert [(e["order_id"], e["amount_minor"]) for e in ledger] == [("ord_1001", 19900)]
    assert api.client.get("/v1/demo/provider/ledger", headers=auth(OTHER_TENANT)).json() == {
        "entries": []
    }


def test_other_tenants_order_is_404(api: Api) -> None:
    """globex's orders do not exist for acme."""
    response = api.client.get("/v1/demo/orders/ord_2001", headers=auth(AGENT))
    assert_problem(response, 404, "not_found")
    assert api.client.get("/v1/demo/orders/ord_2001", headers=auth(OTHER_TENANT)).status_code == 200
