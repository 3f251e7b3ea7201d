"""`refund_order`: the seeds' worked example, declared as a signoff write tool."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, ClassVar

from pydantic import Field

from signoff import (
    ApprovalPolicy,
    Catalog,
    Clarification,
    LookupOutcome,
    Preview,
    PreviewField,
    Principal,
    ProviderOutcome,
    ResourceState,
    Risk,
    RiskLevel,
    SideEffect,
    StrictArgs,
    WriteTool,
)
from signoff.demo._provider import RefundProvider
from signoff.demo._shop import DemoShop
from signoff.exceptions import Forbidden, InvalidArguments, NotFound

# ISO 4217 minor-unit exponents of the currencies the demo shop accepts.
CURRENCIES: dict[str, tuple[int, str, str]] = {
    "CNY": (2, "¥", "Chinese yuan"),
    "USD": (2, "$", "US dollar"),
    "EUR": (2, "€", "euro"),
    "JPY": (0, "¥", "Japanese yen"),
}
HIGH_RISK_MINOR = 100_000
SUPPORT_ROLE = "support"
APPROVER_ROLE = "refund_approver"


class RefundArgs(StrictArgs):
    """Refund part or all of what a customer paid for an order."""

    order_id: Annotated[str, Field(pattern=r"^ord_[0-9]{1,12}$", description="The order to refund")]
    amount_minor: Annotated[
        int, Field(gt=0, le=10**12, description="Amount in the currency's minor unit (fen, cents)")
    ]
    currency: Annotated[
        str | None, Field(pattern=r"^[A-Z]{3}$", description="ISO 4217 code, e.g. CNY")
    ]
    reason: Annotated[str | None, Field(max_length=500, description="Why the customer is refunded")]


def minor_unit(currency: str) -> str:
    """What one unit of an amount in minor units is, e.g. ``1/100 CNY``."""
    exponent, _, _ = CURRENCIES[currency]
    return currency if exponent == 0 else f"1/{10**exponent} {currency}"


def format_money(amount_minor: int, currency: str) -> str:
    exponent, symbol, _ = CURRENCIES[currency]
    if exponent == 0:
        return f"{symbol}{amount_minor:,}"
    units, cents = divmod(amount_minor, 10**exponent)
    return f"{symbol}{units:,}.{cents:0{exponent}d}"


class RefundOrder(WriteTool[RefundArgs]):
    name = "refund_order"
    version = "1"
    description = "Refund money to the customer who paid for an order."
    side_effect = SideEffect.EXTERNAL
    ttl = timedelta(minutes=10)
    approver_role = APPROVER_ROLE
    reject_reasons = ("wrong_amount", "wrong_target", "policy", "suspicious")
    # The policy file may move it per tenant: [tools.refund_order.thresholds] (POLICIES.md).
    thresholds: ClassVar[Mapping[str, int | str]] = {"high_risk_minor": HIGH_RISK_MINOR}
    amount_argument = "amount_minor"
    currency_argument = "currency"
    mandates = True

    def __init__(self, shop: DemoShop, provider: RefundProvider | None = None) -> None:
        self.shop = shop
        self.provider = provider or RefundProvider(shop)

    def normalize(self, args: RefundArgs, principal: Principal) -> RefundArgs | Clarification:
        if args.currency is None:
            return Clarification(
                f"Which currency is {args.amount_minor} in? Give an ISO 4217 code such as CNY.",
                field="currency",
            )
        if args.currency not in CURRENCIES:
            raise InvalidArguments(f"currency {args.currency} is not accepted", field="currency")
        return args

    def read_state(self, args: RefundArgs, principal: Principal) -> ResourceState:
        order = self.shop.order(principal.tenant, args.order_id)
        if order is None:
            raise NotFound("no such order", order_id=args.order_id)
        if principal.subject != order.owner and SUPPORT_ROLE not in principal.roles:
            raise Forbidden("only the customer or support staff may request this refund")
        if args.currency is not None and args.currency != order.currency:
            raise InvalidArguments(
                f"the order was paid in {order.currency}, not {args.currency}", field="currency"
            )
        if order.refunded + args.amount_minor > order.payable:
            raise InvalidArguments(
                "the refund exceeds what is left to refund",
                field="amount_minor",
                refundable=order.payable - order.refunded,
            )
        return ResourceState(
            resource_id=f"order:{order.order_id}",
            version=str(order.version),
            summary={
                "tenant": order.tenant,
                "order_id": order.order_id,
                "currency": order.currency,
                "payable_minor": order.payable,
                "refunded_minor": order.refunded,
            },
            beneficiary=order.owner,
        )

    def preview(self, args: RefundArgs, state: ResourceState) -> Preview:
        assert args.currency is not None
        money = format_money(args.amount_minor, args.currency)
        paid = format_money(state.summary["payable_minor"], args.currency)
        before = format_money(state.summary["refunded_minor"], args.currency)
        after = format_money(state.summary["refunded_minor"] + args.amount_minor, args.currency)
        currency = args.currency
        _, _, currency_name = CURRENCIES[currency]
        return Preview(
            title=f"Refund {money} on order {args.order_id}",
            description=self.description,
            fields=(
                PreviewField("order_id", "Order", args.order_id),
                PreviewField(
                    "amount_minor",
                    "Amount",
                    args.amount_minor,
                    money,
                    unit=minor_unit(currency),
                    currency=currency,
                ),
                PreviewField(
                    "currency", "Currency", args.currency, f"{args.currency} ({currency_name})"
                ),
                PreviewField("reason", "Reason", args.reason),
            ),
            impact=f"Refunded on this order goes from {before} to {after} of {paid} paid.",
            reversibility="Irreversible: the money leaves the merchant account.",
            external_reach="Calls the payment provider; the customer is notified by their bank.",
            facts=(f"Order {args.order_id} belongs to customer {state.beneficiary}.",),
        )

    def risk(self, args: RefundArgs, state: ResourceState) -> Risk:
        if args.amount_minor >= self.threshold("high_risk_minor"):
            return Risk(RiskLevel.HIGH, ("amount at or above the high-risk threshold",))
        return Risk(RiskLevel.MEDIUM, ("money leaves the company",))

    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        """High risk: the approver's passkey signs the refund, or else re-types the amount."""
        high = risk.level is RiskLevel.HIGH
        return ApprovalPolicy(
            role=APPROVER_ROLE,
            retype=("amount_minor",) if high else (),
            device="or_retype" if high else "none",
        )

    def execute(
        self, args: RefundArgs, request_key: str, expected: ResourceState
    ) -> ProviderOutcome:
        assert args.currency is not None
        return self.provider.refund(
            tenant=expected.summary["tenant"],
            order_id=args.order_id,
            amount_minor=args.amount_minor,
            currency=args.currency,
            request_key=request_key,
            expected_version=int(expected.version),
        )

    def lookup(self, request_key: str) -> LookupOutcome:
        return self.provider.lookup(request_key)


def demo_catalog(shop: DemoShop, provider: RefundProvider | None = None) -> Catalog:
    from signoff.demo._note_tool import AddOrderNote  # low risk, confirmable in-band (MCP form)
    from signoff.demo._suspend_tool import SuspendAccount  # time arguments (PROTOCOL rule 2)

    return Catalog([RefundOrder(shop, provider), AddOrderNote(shop), SuspendAccount(shop)])
