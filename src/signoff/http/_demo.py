"""Demo mode only: the shop's order rows and the provider's ledger, the external side effect."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from signoff.exceptions import NotFound
from signoff.http._deps import Caller, State
from signoff.http._openapi import problems
from signoff.http._views import DemoOrderView, Ledger, LedgerEntryView

router = APIRouter(prefix="/v1/demo", tags=["demo"])


@router.get(
    "/orders/{order_id}",
    operation_id="getDemoOrder",
    response_model=DemoOrderView,
    responses=problems(400, 401, 404),
    summary="An order of the caller's tenant in the demo shop",
)
def demo_order(
    order_id: Annotated[str, Path(min_length=1, max_length=64)], caller: Caller, state: State
) -> DemoOrderView:
    assert state.demo is not None
    order = state.demo.shop.order(caller.tenant, order_id)
    if order is None:
        raise NotFound("no such order", order_id=order_id)
    return DemoOrderView(
        tenant=order.tenant,
        order_id=order.order_id,
        owner=order.owner,
        currency=order.currency,
        payable_minor=order.payable,
        refunded_minor=order.refunded,
        version=order.version,
    )


@router.get(
    "/provider/ledger",
    operation_id="getDemoLedger",
    response_model=Ledger,
    responses=problems(401),
    summary="The refund provider's ledger for the caller's tenant",
)
def demo_ledger(caller: Caller, state: State) -> Ledger:
    assert state.demo is not None
    entries = state.demo.provider.ledger(caller.tenant)
    return Ledger(
        entries=[
            LedgerEntryView(
                request_key=e.request_key,
                reference=e.reference,
                tenant=e.tenant,
                order_id=e.order_id,
                amount_minor=e.amount_minor,
                currency=e.currency,
            )
            for e in entries
        ]
    )
