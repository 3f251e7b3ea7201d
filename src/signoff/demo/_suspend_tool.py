"""`suspend_account`: suspend a customer's account from one time until another.

The demo's tool with time arguments (PROTOCOL rule 2). The model may write a time with an
offset, ``Z`` or an IANA zone; the canonical arguments hold it in UTC RFC 3339, so the
digest never depends on how it was written, and a time that names no single instant (no
zone, an unknown or abbreviated zone, a wall time the zone skips or repeats) is a
clarification, never a confirmation. The preview shows each time in the time zone the
tenant's approvers work in, with its offset (``2026-09-01 14:20:00 +08:00``).

The suspension is a row in the shop's own table ``account_suspensions``, written once per
request key and only while the customer's suspensions are as the approver saw them.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Annotated

from pydantic import Field

from signoff import (
    Clarification,
    LookupOutcome,
    NotFoundAtProvider,
    Preview,
    PreviewField,
    Principal,
    ProviderOutcome,
    ResourceState,
    Risk,
    RiskLevel,
    SideEffect,
    StrictArgs,
    Succeeded,
    TerminalFailure,
    WriteTool,
    display_time,
    normalize_time,
)
from signoff.demo._shop import DemoShop
from signoff.demo._tool import SUPPORT_ROLE
from signoff.exceptions import Forbidden, InvalidArguments, NotFound

ACCOUNT_APPROVER_ROLE = "account_approver"
MAX_SUSPENSION = timedelta(days=366)
LONG_SUSPENSION = timedelta(days=30)
APPROVER_ZONES: Mapping[str, str] = {"acme": "Asia/Shanghai", "globex": "Europe/Berlin"}
"""The time zone each demo tenant's approvers work in; other tenants see UTC."""

_SUSPENSIONS_TABLE = """CREATE TABLE IF NOT EXISTS account_suspensions (
    request_key TEXT PRIMARY KEY,
    reference TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    customer TEXT NOT NULL,
    starts_at TEXT NOT NULL,
    ends_at TEXT NOT NULL,
    reason TEXT
)"""
_POSTGRES_DDL_LOCK = 0x5159_0A09
_TIME_TEXT = Field(
    max_length=64,
    description="RFC 3339 with an offset or Z (2026-09-01T14:20:00+08:00), or a wall time "
    "with an IANA zone in brackets (2026-09-01T14:20:00[Asia/Shanghai])",
)


class SuspendArgs(StrictArgs):
    """Suspend one customer's account for a period."""

    customer: Annotated[str, Field(pattern=r"^u_[0-9]{1,12}$", description="The customer")]
    starts_at: Annotated[str, _TIME_TEXT]
    ends_at: Annotated[str, _TIME_TEXT]
    reason: Annotated[str | None, Field(max_length=500, description="Why")]


class SuspendAccount(WriteTool[SuspendArgs]):
    name = "suspend_account"
    version = "1"
    description = "Suspend a customer's account from one time until another."
    side_effect = SideEffect.REVERSIBLE
    ttl = timedelta(minutes=30)
    approver_role = ACCOUNT_APPROVER_ROLE
    reject_reasons = ("wrong_target", "wrong_time", "policy", "suspicious")

    def __init__(self, shop: DemoShop, *, zones: Mapping[str, str] = APPROVER_ZONES) -> None:
        self.shop = shop
        self.zones = dict(zones)
        shop.ensure_table(_SUSPENSIONS_TABLE, lock_id=_POSTGRES_DDL_LOCK)

    def normalize(self, args: SuspendArgs, principal: Principal) -> SuspendArgs | Clarification:
        """Both times as UTC RFC 3339, or the question to ask; the period must be forward."""
        starts = normalize_time(args.starts_at, field="starts_at")
        if isinstance(starts, Clarification):
            return starts
        ends = normalize_time(args.ends_at, field="ends_at")
        if isinstance(ends, Clarification):
            return ends
        length = _instant(ends) - _instant(starts)
        if length <= timedelta(0):
            raise InvalidArguments("ends_at must be after starts_at", field="ends_at")
        if length > MAX_SUSPENSION:
            raise InvalidArguments("a suspension lasts at most 366 days", field="ends_at")
        return args.model_copy(update={"starts_at": starts, "ends_at": ends})

    def read_state(self, args: SuspendArgs, principal: Principal) -> ResourceState:
        if SUPPORT_ROLE not in principal.roles:
            raise Forbidden("only support staff may ask to suspend an account")
        with self.shop.db.read() as conn:
            known = conn.execute(
                "SELECT COUNT(*) FROM orders WHERE tenant = ? AND owner = ?",
                (principal.tenant, args.customer),
            ).fetchone()[0]
            suspensions = conn.execute(
                "SELECT COUNT(*) FROM account_suspensions WHERE tenant = ? AND customer = ?",
                (principal.tenant, args.customer),
            ).fetchone()[0]
        if not known:
            raise NotFound("no such customer", customer=args.customer)
        return ResourceState(
            resource_id=f"account:{args.customer}",
            version=str(suspensions),
            summary={
                "tenant": principal.tenant,
                "customer": args.customer,
                "suspensions": int(suspensions),
                "zone": self.zones.get(principal.tenant, "UTC"),
            },
            beneficiary=args.customer,
        )

    def preview(self, args: SuspendArgs, state: ResourceState) -> Preview:
        zone = state.summary["zone"]
        starts, ends = display_time(args.starts_at, zone), display_time(args.ends_at, zone)
        length = _instant(args.ends_at) - _instant(args.starts_at)
        unit = f"UTC (RFC 3339); shown in {zone}"
        return Preview(
            title=f"Suspend the account of {args.customer} from {starts} until {ends}",
            description=self.description,
            fields=(
                PreviewField("customer", "Customer", args.customer),
                PreviewField("starts_at", "From", args.starts_at, starts, unit=unit),
                PreviewField("ends_at", "Until", args.ends_at, ends, unit=unit),
                PreviewField("reason", "Reason", args.reason),
            ),
            impact=f"{args.customer} cannot sign in or order for {_duration(length)}.",
            reversibility="Reversible: the suspension can be lifted early by support.",
            external_reach="The customer is told by e-mail when the suspension starts.",
            facts=(
                f"Times are shown in {zone}, where this tenant's approvers work; "
                "the machine values are UTC.",
                f"{args.customer} has {state.summary['suspensions']} earlier suspension(s).",
            ),
        )

    def risk(self, args: SuspendArgs, state: ResourceState) -> Risk:
        if _instant(args.ends_at) - _instant(args.starts_at) > LONG_SUSPENSION:
            return Risk(RiskLevel.HIGH, ("a suspension longer than 30 days",))
        return Risk(RiskLevel.MEDIUM, ("the customer loses access for a while",))

    def execute(
        self, args: SuspendArgs, request_key: str, expected: ResourceState
    ) -> ProviderOutcome:
        """One row per request key, only while the customer's suspensions are as seen."""
        tenant = expected.summary["tenant"]
        with self.shop.db.write() as conn:
            done = conn.execute(
                "SELECT reference FROM account_suspensions WHERE request_key = ?", (request_key,)
            ).fetchone()
            if done is not None:
                return Succeeded(str(done[0]))
            reference = "susp_" + uuid.uuid4().hex[:24]
            added = conn.execute(
                "INSERT INTO account_suspensions (request_key, reference, tenant, customer, "
                "starts_at, ends_at, reason) SELECT ?, ?, ?, ?, ?, ?, ? WHERE "
                "(SELECT COUNT(*) FROM account_suspensions WHERE tenant = ? AND customer = ?) = ?",
                (
                    *(request_key, reference, tenant, args.customer),
                    *(args.starts_at, args.ends_at, args.reason),
                    *(tenant, args.customer, int(expected.version)),
                ),
            ).rowcount
        if added != 1:
            return TerminalFailure(
                "the account's suspensions changed since the preview", code="state_changed"
            )
        return Succeeded(reference)

    def lookup(self, request_key: str) -> LookupOutcome:
        with self.shop.db.read() as conn:
            row = conn.execute(
                "SELECT reference FROM account_suspensions WHERE request_key = ?", (request_key,)
            ).fetchone()
        return NotFoundAtProvider() if row is None else Succeeded(str(row[0]))


def suspensions(shop: DemoShop, tenant: str, customer: str) -> list[tuple[str, str, str, str]]:
    """The shop's rows for ``customer``: (request key, starts_at, ends_at, reference)."""
    with shop.db.read() as conn:
        rows = conn.execute(
            "SELECT request_key, starts_at, ends_at, reference FROM account_suspensions "
            "WHERE tenant = ? AND customer = ? ORDER BY starts_at, request_key",
            (tenant, customer),
        ).fetchall()
    return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]


def _instant(canonical: str) -> datetime:
    return datetime.fromisoformat(canonical)  # the canonical form: UTC, ending in Z


def _duration(length: timedelta) -> str:
    days, rest = divmod(int(length.total_seconds()), 86_400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [
        f"{n} {unit}{'s' if n != 1 else ''}"
        for n, unit in ((days, "day"), (hours, "hour"), (minutes, "minute"))
        if n
    ]
    return " ".join(parts) or "less than a minute"
