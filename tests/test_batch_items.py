"""A batch fails item by item, each with its own receipt line (seed 000: 失败项独立回执).

Every item's outcome, request key and provider reference is in the receipt and the signed
receipt; a failed item is reported on its own, never stops the others and never widens the
set. Each test asserts the shop's rows per item: the refund ledger, the order rows and the
provider's own record of the batch's items.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import jwt
import pytest
from fastapi.testclient import TestClient

from signoff import (
    Catalog,
    ExecutionHooks,
    ExecutionStatus,
    Gate,
    HookPoint,
    ItemOutcome,
    Principal,
    Proposal,
    ProposalStatus,
)
from signoff._model import Execution
from signoff.demo import FaultMode, RefundCustomerOrders, RefundOrder
from signoff.exceptions import StateChanged
from signoff.proof import RECEIPT_TYP, PublicKeys, verify_receipt
from tests.conftest import APPROVER, TOKEN_KEY, World, make_world
from tests.http.conftest import auth, make_app
from tests.test_store_contract import STORES, backend_for
from tests.web.conftest import BASE, Pages, make_pages_app

CUSTOMER = Principal("u_500", "acme", actor="agent:support-bot")
ORDERS = ("ord_5001", "ord_5002", "ord_5003")


def _batch_world(
    tmp_path: Path, *, token_form: str = "opaque", hooks: ExecutionHooks | None = None
) -> World:
    world = make_world(tmp_path, token_form=token_form)
    for order_id in ORDERS:
        world.shop.add_order("acme", order_id, owner="u_500", payable=10_000)
    world.gate = Gate(
        Catalog([RefundOrder(world.shop, world.provider), RefundCustomerOrders(world.shop)]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        proof=world.gate.proof,
        hooks=hooks,
    )
    return world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = _batch_world(tmp_path)
    yield w
    w.store.close()
    w.shop.close()


def _tool(world: World) -> RefundCustomerOrders:
    tool = world.gate.catalog.get("refund_customer_orders")
    assert isinstance(tool, RefundCustomerOrders)
    return tool


def _propose(world: World) -> Proposal:
    args = {"customer": "u_500", "amount_minor": 500, "currency": "CNY", "max_orders": 5}
    return world.gate.propose(CUSTOMER, "refund_customer_orders", {**args, "reason": None})


def _provider_items(world: World, proposal: Proposal) -> dict[str, tuple[str, str | None]]:
    """The provider's own record of the batch: order → (status, reference)."""
    with world.shop.db.read() as conn:
        rows = conn.execute(
            "SELECT order_id, status, reference FROM refund_batch_items WHERE batch_key = ?",
            (proposal.request_key,),
        ).fetchall()
    return {str(r[0]): (str(r[1]), r[2]) for r in rows}


def _ledger(world: World) -> dict[str, tuple[str, str]]:
    """The refund ledger: order → (request key, reference)."""
    return {e.order_id: (e.request_key, e.reference) for e in world.provider.ledger("acme")}


def _expected_items(proposal: Proposal, world: World, failed: dict[str, str]) -> list[ItemOutcome]:
    ledger = _ledger(world)
    return [
        ItemOutcome(
            resource=f"order:{order_id}",
            request_key=f"{proposal.request_key}#{order_id}",
            status="failed_terminal" if order_id in failed else "succeeded",
            provider_reference=None if order_id in failed else ledger[order_id][1],
            error_code=failed.get(order_id),
        )
        for order_id in ORDERS
    ]


def test_every_item_is_in_the_receipt_with_its_key_and_reference(world: World) -> None:
    """All three refunds succeed: the receipt names each order, its derived key and the
    ledger's reference for it, and the provider recorded the same items."""
    proposal = _propose(world)
    result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    assert result.receipt is not None
    assert result.receipt.status is ExecutionStatus.SUCCEEDED
    assert list(result.receipt.items) == _expected_items(proposal, world, {})
    assert sorted(key for key, _ in _ledger(world).values()) == [
        f"{proposal.request_key}#{order_id}" for order_id in ORDERS
    ]
    assert _provider_items(world, proposal) == {
        o: ("succeeded", _ledger(world)[o][1]) for o in ORDERS
    }
    stored = world.gate.receipt(CUSTOMER, result.execution.execution_id)
    assert stored.items == result.receipt.items


def test_an_item_the_provider_refuses_is_reported_on_its_own(world: World) -> None:
    """ord_5002's payment method refuses: the other two are refunded and reported with their
    references, ord_5002 is failed_terminal on its own line, nothing else is touched."""
    _tool(world).fail_item("acme", "ord_5002", FaultMode.TERMINAL)
    proposal = _propose(world)
    result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    assert (result.execution.status, result.execution.error_code) == (
        ExecutionStatus.FAILED_TERMINAL,
        "partial_failure",
    )
    assert result.receipt is not None
    assert list(result.receipt.items) == _expected_items(proposal, world, {"ord_5002": "refused"})
    assert sorted(_ledger(world)) == ["ord_5001", "ord_5003"]
    assert [world.refunded(o) for o in ORDERS] == [500, 0, 500]
    assert _provider_items(world, proposal)["ord_5002"] == ("failed_terminal", None)
    assert world.gate.proposal(CUSTOMER, proposal.proposal_id).status is (
        ProposalStatus.FAILED_TERMINAL
    )
    # The set never widens: a matching order added later is never part of this batch.
    world.shop.add_order("acme", "ord_5004", owner="u_500", payable=10_000)
    again = world.gate.retry(CUSTOMER, result.execution.execution_id)
    assert again.duplicate and again.receipt == result.receipt
    assert world.refunded("ord_5004") == 0 and len(_ledger(world)) == 2


def test_an_item_failed_for_now_is_attempted_again_with_its_own_key(world: World) -> None:
    """ord_5003 fails for now: failed_retryable with the two others done; the retry replays
    those (no second refund) and refunds ord_5003 under its same key."""
    _tool(world).fail_item("acme", "ord_5003", FaultMode.RETRYABLE)
    proposal = _propose(world)
    first = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    assert first.execution.status is ExecutionStatus.FAILED_RETRYABLE
    assert [i.status for i in first.execution.items] == [
        "succeeded",
        "succeeded",
        "failed_retryable",
    ]
    assert sorted(_ledger(world)) == ["ord_5001", "ord_5002"]
    before = _ledger(world)
    settled = world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert settled.receipt is not None
    assert settled.receipt.status is ExecutionStatus.SUCCEEDED
    assert list(settled.receipt.items) == _expected_items(proposal, world, {})
    assert {o: before[o] for o in before} == {o: _ledger(world)[o] for o in before}
    assert [world.refunded(o) for o in ORDERS] == [500, 500, 500]


def test_an_item_failed_for_good_stays_failed_when_the_batch_is_retried(world: World) -> None:
    """ord_5001 refused, ord_5002 failed for now: the retry attempts ord_5002 only; the
    refused order is never refunded later, and the batch ends partial_failure."""
    tool = _tool(world)
    tool.fail_item("acme", "ord_5001", FaultMode.TERMINAL)
    tool.fail_item("acme", "ord_5002", FaultMode.RETRYABLE)
    proposal = _propose(world)
    first = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    assert first.execution.status is ExecutionStatus.FAILED_RETRYABLE
    settled = world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert settled.execution.error_code == "partial_failure"
    assert settled.receipt is not None
    assert list(settled.receipt.items) == _expected_items(proposal, world, {"ord_5001": "refused"})
    assert [world.refunded(o) for o in ORDERS] == [0, 500, 500]
    assert _provider_items(world, proposal)["ord_5001"] == ("failed_terminal", None)


def test_an_order_that_changed_while_the_batch_ran_fails_alone(tmp_path: Path) -> None:
    """ord_5001 changes after the freshness check, before the provider call: its refund is
    refused (state_changed) on its own line; the other two are refunded."""
    holder: list[World] = []

    def touch(point: HookPoint, execution: Execution) -> None:
        if point is HookPoint.BEFORE_PROVIDER_CALL:
            holder[0].shop.touch_order("acme", "ord_5001")

    world = _batch_world(tmp_path, hooks=touch)
    holder.append(world)
    try:
        proposal = _propose(world)
        result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
        assert result.execution.error_code == "partial_failure"
        assert result.receipt is not None
        expected = _expected_items(proposal, world, {"ord_5001": "state_changed"})
        assert list(result.receipt.items) == expected
        assert [world.refunded(o) for o in ORDERS] == [0, 500, 500]
    finally:
        world.store.close()
        world.shop.close()


def test_every_item_changed_is_state_changed(tmp_path: Path) -> None:
    """When no item could run because each order moved, the batch is state_changed."""
    holder: list[World] = []

    def touch_all(point: HookPoint, execution: Execution) -> None:
        if point is HookPoint.BEFORE_PROVIDER_CALL:
            for order_id in ORDERS:
                holder[0].shop.touch_order("acme", order_id)

    world = _batch_world(tmp_path, hooks=touch_all)
    holder.append(world)
    try:
        proposal = _propose(world)
        with pytest.raises(StateChanged):
            world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
        assert world.provider.ledger() == []
        execution = world.gate.execution_for(CUSTOMER, proposal.proposal_id)
        assert execution is not None
        assert {i.error_code for i in execution.items} == {"state_changed"}
    finally:
        world.store.close()
        world.shop.close()


def test_a_lost_answer_is_settled_item_by_item(world: World) -> None:
    """The answer of a finished batch is lost: the lookup by request key reports every item
    from the provider's record, and nothing is refunded twice."""
    _tool(world).fail_item("acme", "ord_5002", FaultMode.TERMINAL)
    proposal = _propose(world)
    world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    first = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    assert first.execution.status is ExecutionStatus.UNKNOWN
    settled = world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert settled.receipt is not None
    assert settled.execution.error_code == "partial_failure"
    assert list(settled.receipt.items) == _expected_items(proposal, world, {"ord_5002": "refused"})
    assert sorted(_ledger(world)) == ["ord_5001", "ord_5003"]


def test_the_signed_receipt_states_each_item(tmp_path: Path) -> None:
    """The signed receipt carries the items as the outcome event recorded them, and
    verifies offline."""
    world = _batch_world(tmp_path, token_form="signed")
    try:
        _tool(world).fail_item("acme", "ord_5003", FaultMode.TERMINAL)
        proposal = _propose(world)
        result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
        assert result.signed_receipt is not None and result.receipt is not None
        proof = world.gate.proof
        assert proof is not None
        keys = PublicKeys(proof.keys.public_jwks())
        report = verify_receipt(result.signed_receipt, keys)
        assert report.ok, report.findings
        claims = jwt.decode(result.signed_receipt, options={"verify_signature": False})
        assert claims["items"] == [item.to_dict() for item in result.receipt.items]
        assert claims["items"][2]["status"] == "failed_terminal"
    finally:
        world.store.close()
        world.shop.close()


def test_a_signed_receipt_claiming_a_failed_item_succeeded_fails(tmp_path: Path) -> None:
    """Re-signed with the deployment's own key, a receipt whose items say the refused
    order was refunded does not match its events: receipt_mismatch."""
    world = _batch_world(tmp_path, token_form="signed")
    try:
        _tool(world).fail_item("acme", "ord_5003", FaultMode.TERMINAL)
        proposal = _propose(world)
        result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
        assert result.signed_receipt is not None and world.gate.proof is not None

        def all_refunded(claims: dict[str, object]) -> None:
            items = claims["items"]
            assert isinstance(items, list)
            items[2] = {**items[2], "status": "succeeded", "provider_reference": "re_fake"}

        claims = jwt.decode(result.signed_receipt, options={"verify_signature": False})
        all_refunded(claims)
        key = world.gate.proof.keys.active_key
        forged = jwt.encode(claims, key.private_key, "EdDSA", {"kid": key.kid, "typ": RECEIPT_TYP})
        report = verify_receipt(forged, PublicKeys(world.gate.proof.keys.public_jwks()))
        assert "receipt_mismatch" in {f.code for f in report.findings}
    finally:
        world.store.close()
        world.shop.close()


@pytest.mark.parametrize("kind", STORES)
def test_item_outcomes_are_kept_alike_on_both_stores(kind: str, tmp_path: Path) -> None:
    """The execution row keeps the items (SQLite in-process, PostgreSQL in its outcome
    function): read back, they are what the provider reported."""
    with backend_for(kind, tmp_path) as backend:
        for order_id in ORDERS:
            backend.shop.add_order("acme", order_id, owner="u_500", payable=10_000)
        tool = RefundCustomerOrders(backend.shop)
        gate = Gate(
            Catalog([tool]),
            backend.store,
            token_key=TOKEN_KEY,
            clock=backend.clock,
            directory=backend.directory,
        )
        tool.fail_item("acme", "ord_5001", FaultMode.TERMINAL)
        args = {"customer": "u_500", "amount_minor": 500, "currency": "CNY", "max_orders": 5}
        proposal = gate.propose(CUSTOMER, "refund_customer_orders", {**args, "reason": None})
        token = backend.approve(gate, proposal)
        result = gate.execute(CUSTOMER, proposal.proposal_id, token)
        stored = gate.execution(CUSTOMER, result.execution.execution_id)
        assert stored.items == result.execution.items
        assert [(i.resource, i.status) for i in stored.items] == [
            ("order:ord_5001", "failed_terminal"),
            ("order:ord_5002", "succeeded"),
            ("order:ord_5003", "succeeded"),
        ]
        refs = {e.order_id: e.reference for e in backend.provider.ledger("acme")}
        assert [i.provider_reference for i in stored.items[1:]] == [
            refs["ord_5002"],
            refs["ord_5003"],
        ]
        assert APPROVER.subject in gate.receipt(CUSTOMER, stored.execution_id).approvers


def test_the_http_receipt_lists_each_item(world: World) -> None:
    """GET /v1/executions/{id}: the receipt's items, the failed one on its own line."""
    _tool(world).fail_item("acme", "ord_5002", FaultMode.TERMINAL)
    proposal = _propose(world)
    result = world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    with TestClient(make_app(world)) as client:
        answer = client.get(
            f"/v1/executions/{result.execution.execution_id}", headers=auth(CUSTOMER)
        )
    assert answer.status_code == 200, answer.text
    items = answer.json()["receipt"]["items"]
    assert items == [
        item.to_dict() for item in _expected_items(proposal, world, {"ord_5002": "refused"})
    ]


def test_the_result_page_lists_each_item(world: World) -> None:
    """The approver's result page shows every item with its outcome, key and reference."""
    _tool(world).fail_item("acme", "ord_5002", FaultMode.TERMINAL)
    proposal = _propose(world)
    world.gate.execute(CUSTOMER, proposal.proposal_id, world.approve(proposal))
    app = make_pages_app(world)
    with TestClient(app, base_url=BASE) as client:
        pages = Pages(app, client, world)
        pages.sign_in(APPROVER)
        page = client.get(f"/ui/proposals/{proposal.proposal_id}/result")
    assert page.status_code == 200, page.text
    rows = page.text.split('<table class="items"', 1)[1].split("</table>", 1)[0]
    for order_id in ORDERS:
        assert f"order:{order_id}" in rows and f"{proposal.request_key}#{order_id}" in rows
    assert "failed terminal" in rows and "<code>refused</code>" in rows
    assert rows.count(">succeeded<") == 2
    for reference in (e.reference for e in world.provider.ledger("acme")):
        assert reference in rows
