"""A mandate's constraints over the canonical arguments, and its digest (docs/POLICIES.md).

    {"currency": "CNY",              the ISO 4217 code every write must use
     "max_amount_minor": 20000,      the most one write may move
     "total_amount_minor": 30000,    the budget, summed over every write that may have happened
     "max_count": 3,                 how many writes
     "resources": ["order:ord_1001", "order:*"],   exact ids, or a prefix ending in *
     "agents": ["agent:support-bot"]}              the agents (act.sub) that may use it

No constraint, no mandate: a tool with an amount needs ``currency`` and
``total_amount_minor``; any tool needs a bound (``max_count`` or a budget).
A mandate is never a blank cheque.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from signoff._canonical import canonical_json
from signoff.exceptions import (
    InvalidRequest,
    MandateExceeded,
    MandateExhausted,
    MandateNotApplicable,
    Refusal,
)

CONSTRAINTS = (
    "currency",
    "max_amount_minor",
    "total_amount_minor",
    "max_count",
    "resources",
    "agents",
)
MAX_AMOUNT = 10**15
MAX_COUNT = 100_000
MAX_LIST = 1000
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_ITEM = re.compile(r"^[\x21-\x7e]{1,200}$")


@dataclass(frozen=True, slots=True)
class Constraints:
    currency: str | None = None
    max_amount_minor: int | None = None
    total_amount_minor: int | None = None
    max_count: int | None = None
    resources: tuple[str, ...] | None = None
    agents: tuple[str, ...] | None = None

    @classmethod
    def parse(cls, raw: Any, *, has_amount: bool) -> Constraints:
        """Checked constraints, or :class:`InvalidRequest` naming what is wrong."""
        if not isinstance(raw, Mapping):
            raise InvalidRequest("constraints is an object", field="constraints")
        unknown = sorted(set(raw) - set(CONSTRAINTS))
        if unknown:
            raise InvalidRequest(
                f"unknown constraints {unknown}; known: {', '.join(CONSTRAINTS)}",
                field="constraints",
            )
        parsed = cls(
            currency=_currency(raw.get("currency")),
            max_amount_minor=_bounded(raw, "max_amount_minor", MAX_AMOUNT),
            total_amount_minor=_bounded(raw, "total_amount_minor", MAX_AMOUNT),
            max_count=_bounded(raw, "max_count", MAX_COUNT),
            resources=_names(raw, "resources"),
            agents=_names(raw, "agents"),
        )
        parsed._check_bounded(has_amount=has_amount)
        return parsed

    def _check_bounded(self, *, has_amount: bool) -> None:
        money = (self.currency, self.max_amount_minor, self.total_amount_minor)
        if has_amount:
            if self.currency is None or self.total_amount_minor is None:
                raise InvalidRequest(
                    "a mandate over amounts needs currency and total_amount_minor (a budget); "
                    "no constraint, no mandate",
                    field="constraints",
                )
            if (
                self.max_amount_minor is not None
                and self.max_amount_minor > self.total_amount_minor
            ):
                raise InvalidRequest(
                    "max_amount_minor cannot be more than total_amount_minor",
                    field="constraints.max_amount_minor",
                )
        elif any(value is not None for value in money):
            raise InvalidRequest(
                "this tool has no amount: currency and amount constraints do not apply",
                field="constraints",
            )
        elif self.max_count is None:
            raise InvalidRequest(
                "a mandate needs max_count (how many writes); no constraint, no mandate",
                field="constraints.max_count",
            )

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in CONSTRAINTS:
            value = getattr(self, name)
            if value is not None:
                found[name] = list(value) if isinstance(value, tuple) else value
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Constraints:
        return cls(
            currency=data.get("currency"),
            max_amount_minor=data.get("max_amount_minor"),
            total_amount_minor=data.get("total_amount_minor"),
            max_count=data.get("max_count"),
            resources=None if data.get("resources") is None else tuple(data["resources"]),
            agents=None if data.get("agents") is None else tuple(data["agents"]),
        )

    def remaining(self, spent: int, used: int) -> tuple[int | None, int | None]:
        """(amount left, count left); None where the mandate sets no such bound."""
        amount = None if self.total_amount_minor is None else self.total_amount_minor - spent
        count = None if self.max_count is None else self.max_count - used
        return amount, count

    def refusal(
        self,
        *,
        mandate_id: str,
        actor: str | None,
        resource_id: str,
        amount: int | None,
        currency: str | None,
        spent: int,
        used: int,
    ) -> Refusal | None:
        """Why this write is not covered, naming the constraint; None when it is."""
        ids = {"mandate_id": mandate_id}
        if self.agents is not None and actor not in self.agents:
            return MandateNotApplicable(
                f"the mandate does not cover the agent {actor or '(none)'}",
                constraint="agents",
                **ids,
            )
        if self.resources is not None and not any(_covers(p, resource_id) for p in self.resources):
            return MandateNotApplicable(
                f"the mandate does not cover {resource_id}", constraint="resources", **ids
            )
        if self.currency is not None and currency != self.currency:
            return MandateNotApplicable(
                f"the mandate is in {self.currency}, this write in {currency}",
                constraint="currency",
                **ids,
            )
        left_amount, left_count = self.remaining(spent, used)
        if left_count is not None and left_count <= 0:
            return MandateExhausted(
                f"all {self.max_count} writes of the mandate are used",
                constraint="max_count",
                **ids,
            )
        if left_amount is not None and left_amount <= 0:
            return MandateExhausted(
                "the mandate's budget is used up", constraint="total_amount_minor", **ids
            )
        value = amount or 0
        if self.max_amount_minor is not None and value > self.max_amount_minor:
            return MandateExceeded(
                f"{value} is above the mandate's per-write maximum {self.max_amount_minor}",
                constraint="max_amount_minor",
                **ids,
            )
        if left_amount is not None and value > left_amount:
            return MandateExceeded(
                f"{value} is above what is left of the mandate's budget ({left_amount})",
                constraint="total_amount_minor",
                remaining_amount_minor=left_amount,
                **ids,
            )
        return None


def mandate_digest(
    *,
    tool: str,
    tool_version: str,
    requester_subject: str,
    requester_actor: str | None,
    constraints: Mapping[str, Any],
    expires_at: int,
) -> str:
    """sha256(JCS) of what a mandate's approvers consent to (expiry in UTC microseconds)."""
    return hashlib.sha256(
        canonical_json(
            {
                "mandate": {
                    "tool": tool,
                    "tool_version": tool_version,
                    "requester": {"subject": requester_subject, "actor": requester_actor},
                    "constraints": dict(constraints),
                    "expires_at": expires_at,
                }
            }
        )
    ).hexdigest()


def _covers(pattern: str, resource_id: str) -> bool:
    if pattern.endswith("*"):
        return resource_id.startswith(pattern[:-1])
    return resource_id == pattern


def _currency(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _CURRENCY.match(value):
        raise InvalidRequest(
            "currency is an ISO 4217 code such as CNY", field="constraints.currency"
        )
    return value


def _bounded(raw: Mapping[str, Any], name: str, most: int) -> int | None:
    value = raw.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidRequest(f"{name} is an integer from 1 to {most}", field=f"constraints.{name}")
    return value


def _names(raw: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = raw.get(name)
    if value is None:
        return None
    valid = isinstance(value, list) and 1 <= len(value) <= MAX_LIST
    if not valid or not all(isinstance(v, str) and _ITEM.match(v) for v in value):
        raise InvalidRequest(
            f"{name} is a list of 1 to {MAX_LIST} ids (printable, no spaces)",
            field=f"constraints.{name}",
        )
    return tuple(sorted(set(value)))
