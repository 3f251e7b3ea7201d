"""Batches bind the exact resource set: widened or narrowed after confirmation → refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import Catalog, ExecutionStatus, Gate, Principal, Proposal, resource_set_digest
from signoff.demo import FaultMode, RefundCustomerOrders, RefundOrder
from signoff.exceptions import AlreadyConsumed, ArgsMismatch, InvalidArguments, StateChanged
from tests.conftest import APPROVER, TOKEN_KEY, World, make_world

CUSTOMER = Principal("u_500", "acme", actor="agent:support-bot")
ORDERS = ("ord_5001", "ord_5002", "ord_5003")


@pytest.fixture
def batch_world(tmp_path: Path) -> Iterator[World]:
    world = make_world(tmp_path)
    for order_id in ORDERS:
        world.shop.add_order("acme", order_id, owner="u_500", payable=10_000)
    world.gate = Gate(
        Catalog([RefundOrder(world.shop, world.provider), RefundCustomerOrders(world.shop)]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
    )
    yield world
    world.store.close()
    world.shop.close()


def _propose(world: World, **changes: object) -> Proposal:
    args = {"customer": "u_500", "amount_minor": 500, "currency": "CNY", "max_orders": 5}
    return world.gate.propose(
        CUSTOMER, "refund_customer_orders", {**args, "reason": None, **changes}
    )


def test_batch_binds_set_digest_count_and_filter(batch_world: World) -> None:
    """The snapshot names the sorted set by its digest, its count and the frozen filter."""
    proposal = _propose(batch_world)
    summary = proposal.state["summary"]
    assert summary["order_ids"] == list(ORDERS)
    assert summary["count"] == 3
    assert proposal.resource_id == f"orders:{resource_set_digest(list(ORDERS))}"
    assert summary["filter"] == {"customer": "u_500", "currency": "CNY"}


def test_confirmed_batch_refunds_each_order_once(batch_world: World) -> None:
    """One execution, three ledger entries under keys derived from one request key."""
    proposal = _propose(batch_world)
    token = batch_world.approve(proposal)
    result = batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.SUCCEEDED
    ledger = batch_world.provider.ledger()
    assert sorted(e.request_key for e in ledger) == [
        f"{proposal.request_key}#{order_id}" for order_id in ORDERS
    ]
    assert [batch_world.refunded(o) for o in ORDERS] == [500, 500, 500]
    with pytest.raises(AlreadyConsumed):
        batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert len(batch_world.provider.ledger()) == 3


def test_set_widened_after_confirmation_is_refused(batch_world: World) -> None:
    """A fourth matching order appears after approval: refused, nothing refunded."""
    proposal = _propose(batch_world)
    token = batch_world.approve(proposal)
    batch_world.shop.add_order("acme", "ord_5004", owner="u_500", payable=10_000)
    with pytest.raises(ArgsMismatch):
        batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert batch_world.provider.ledger() == []


def test_set_narrowed_or_changed_after_confirmation_is_refused(batch_world: World) -> None:
    """An order leaves the set, or one in it changes: refused, nothing refunded."""
    proposal = _propose(batch_world)
    token = batch_world.approve(proposal)
    batch_world.shop.touch_order("acme", "ord_5002")
    with pytest.raises(StateChanged):
        batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert batch_world.provider.ledger() == []


def test_filter_matching_more_than_max_orders_is_refused(batch_world: World) -> None:
    """The person confirms an upper bound; a wider match never becomes a proposal."""
    with pytest.raises(InvalidArguments):
        _propose(batch_world, max_orders=2)


def test_lost_answer_is_settled_by_batch_lookup(batch_world: World) -> None:
    """A timeout after the batch committed is found by lookup: one batch, three refunds."""
    proposal = _propose(batch_world)
    token = batch_world.approve(proposal)
    batch_world.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    first = batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert first.execution.status is ExecutionStatus.UNKNOWN
    assert len(batch_world.provider.ledger()) == 3
    settled = batch_world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert len(batch_world.provider.ledger()) == 3
    again = batch_world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert again.duplicate and len(batch_world.provider.ledger()) == 3


def test_approver_for_batch_needs_the_role(batch_world: World) -> None:
    """The same role policy guards batches."""
    proposal = _propose(batch_world)
    assert proposal.required_role == "refund_approver"
    assert batch_world.approve(proposal, by=APPROVER)


def test_batch_that_never_reached_the_provider_is_retried_with_the_same_key(
    batch_world: World,
) -> None:
    """Nothing happened at the provider: the retry refunds the batch once, same keys."""
    proposal = _propose(batch_world)
    token = batch_world.approve(proposal)
    batch_world.provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    first = batch_world.gate.execute(CUSTOMER, proposal.proposal_id, token)
    assert first.execution.status is ExecutionStatus.UNKNOWN
    assert batch_world.provider.ledger() == []
    settled = batch_world.gate.retry(CUSTOMER, first.execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert sorted(e.request_key for e in batch_world.provider.ledger()) == [
        f"{proposal.request_key}#{order_id}" for order_id in ORDERS
    ]
