"""The demo shop: orders, refund, note and account-suspension tools, a refund provider."""

from signoff.demo._batch_tool import BatchRefundArgs, RefundCustomerOrders
from signoff.demo._provider import FaultMode, LedgerEntry, RefundProvider
from signoff.demo._shop import DemoShop, Order, seed_demo_orders
from signoff.demo._suspend_tool import SuspendAccount, SuspendArgs, suspensions
from signoff.demo._tool import RefundArgs, RefundOrder, demo_catalog

__all__ = [
    "BatchRefundArgs",
    "DemoShop",
    "FaultMode",
    "LedgerEntry",
    "Order",
    "RefundArgs",
    "RefundCustomerOrders",
    "RefundOrder",
    "RefundProvider",
    "SuspendAccount",
    "SuspendArgs",
    "demo_catalog",
    "seed_demo_orders",
    "suspensions",
]
