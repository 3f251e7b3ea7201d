"""The demo shop and its refund provider behave the same in a SQLite file and in PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from signoff import (
    NotFoundAtProvider,
    ProviderTimeout,
    RetryableFailure,
    Succeeded,
    TerminalFailure,
)
from signoff.demo import DemoShop, FaultMode, RefundProvider
from tests.conftest import World
from tests.pg import fresh_schema

STORES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture(params=STORES)
def shop(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DemoShop]:
    if request.param == "sqlite":
        s = DemoShop(str(tmp_path / "shop.db"))
        yield s
        s.close()
        return
    with fresh_schema("shop") as url:
        s = DemoShop(url)
        yield s
        s.close()


def _refund(provider: RefundProvider, key: str, *, version: int = 1) -> object:
    return provider.refund(
        tenant="acme",
        order_id="ord_1",
        amount_minor=500,
        currency="CNY",
        request_key=key,
        expected_version=version,
    )


def test_orders_are_added_once_and_touched(shop: DemoShop) -> None:
    """add_order ignores a repeat; touch_order bumps the version as another system would."""
    shop.add_order("acme", "ord_1", owner="u_1", payable=1000)
    shop.add_order("acme", "ord_1", owner="u_2", payable=9)
    shop.touch_order("acme", "ord_1")
    order = shop.order("acme", "ord_1")
    assert order is not None
    assert (order.owner, order.payable, order.refunded, order.version) == ("u_1", 1000, 0, 2)
    assert shop.order("acme", "ord_missing") is None


def test_refund_is_idempotent_by_request_key(shop: DemoShop) -> None:
    """The same request key refunds once and answers with the first reference."""
    shop.add_order("acme", "ord_1", owner="u_1", payable=1000)
    provider = RefundProvider(shop)
    first = _refund(provider, "rk-1")
    again = _refund(provider, "rk-1")
    assert isinstance(first, Succeeded) and again == first
    assert provider.lookup("rk-1") == first
    assert isinstance(provider.lookup("rk-2"), NotFoundAtProvider)
    [entry] = provider.ledger("acme")
    assert (entry.request_key, entry.amount_minor, entry.reference) == (
        "rk-1",
        500,
        first.reference,
    )
    order = shop.order("acme", "ord_1")
    assert order is not None and (order.refunded, order.version) == (500, 2)


def test_one_request_key_at_once_from_many_callers_refunds_once(shop: DemoShop) -> None:
    """Callers racing with one key (a retry beside a slow original): one refund, one reference."""
    provider = RefundProvider(shop)
    for round_ in range(8):
        order_id = f"ord_{round_ + 10}"
        shop.add_order("acme", order_id, owner="u_1", payable=1000)

        def call(_: int, order_id: str = order_id, key: str = f"rk-race-{round_}") -> object:
            return provider.refund(
                tenant="acme",
                order_id=order_id,
                amount_minor=500,
                currency="CNY",
                request_key=key,
                expected_version=1,
            )

        with ThreadPoolExecutor(6) as pool:
            answers = list(pool.map(call, range(6)))
        [entry] = [e for e in provider.ledger("acme") if e.order_id == order_id]
        assert answers == [Succeeded(entry.reference)] * 6
        order = shop.order("acme", order_id)
        assert order is not None and (order.refunded, order.version) == (500, 2)


def test_refund_checks_the_version_and_the_balance(shop: DemoShop) -> None:
    """A stale version or an over-refund changes nothing and says state_changed."""
    shop.add_order("acme", "ord_1", owner="u_1", payable=600)
    provider = RefundProvider(shop)
    stale = _refund(provider, "rk-stale", version=7)
    assert isinstance(stale, TerminalFailure) and stale.code == "state_changed"
    assert isinstance(_refund(provider, "rk-1"), Succeeded)
    over = _refund(provider, "rk-2", version=2)
    assert isinstance(over, TerminalFailure) and over.code == "state_changed"
    assert [e.request_key for e in provider.ledger()] == ["rk-1"]


def test_queued_faults_apply_in_order_once_each(shop: DemoShop) -> None:
    """fail_next queues faults in the shop's database; each is used by exactly one call."""
    shop.add_order("acme", "ord_1", owner="u_1", payable=1000)
    provider = RefundProvider(shop)
    provider.fail_next(FaultMode.RETRYABLE)
    provider.fail_next(FaultMode.TERMINAL)
    provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
    assert isinstance(_refund(provider, "rk-1"), RetryableFailure)
    assert isinstance(_refund(provider, "rk-1"), TerminalFailure)
    with pytest.raises(ProviderTimeout):
        _refund(provider, "rk-1")
    assert isinstance(provider.lookup("rk-1"), Succeeded)
    assert isinstance(_refund(provider, "rk-1"), Succeeded)
    assert len(provider.ledger()) == 1


def test_timeout_before_reaching_the_provider_changes_nothing(shop: DemoShop) -> None:
    """TIMEOUT_BEFORE: the caller times out and the provider never saw the request."""
    shop.add_order("acme", "ord_1", owner="u_1", payable=1000)
    provider = RefundProvider(shop)
    provider.fail_next(FaultMode.TIMEOUT_BEFORE)
    with pytest.raises(ProviderTimeout):
        _refund(provider, "rk-1")
    assert isinstance(provider.lookup("rk-1"), NotFoundAtProvider)
    assert provider.ledger() == []


def test_the_seeded_high_risk_order_of_the_screenshots(world: World) -> None:
    """ord_9200 (¥3,000.00 paid) takes the README's ¥1,299.00 refund: high risk, re-typed."""
    order = world.shop.order("acme", "ord_9200")
    assert order is not None and (order.owner, order.payable) == ("u_42", 300_000)
    proposal = world.propose(order_id="ord_9200", amount_minor=129_900)
    assert proposal.preview.title == "Refund ¥1,299.00 on order ord_9200"
    assert proposal.risk.level == "high" and proposal.policy["retype"] == ["amount_minor"]
