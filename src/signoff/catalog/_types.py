"""Value types a tool returns to the gate."""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_STEP_UP_AGE = 86_400
_ACR = re.compile(r"[\x21-\x7e]{1,255}")


class SideEffect(enum.StrEnum):
    """Declared explicitly per tool; never inferred from its name."""

    NONE = "none"
    REVERSIBLE = "reversible"
    IRREVERSIBLE = "irreversible"
    EXTERNAL = "external"


class RiskLevel(enum.StrEnum):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


@dataclass(frozen=True, slots=True)
class Risk:
    """How dangerous the operation is, and why, in words a person reads on the page."""

    level: RiskLevel
    reasons: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level.value, "reasons": list(self.reasons)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Risk:
        return cls(RiskLevel(data["level"]), tuple(data.get("reasons") or ()))


ROLE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/-]{0,127}")
"""A role as identity tokens carry it (``refund_approver``, ``Mail.Approve``, ``realm:ops``)."""
DEFAULT_CHAT_MAX_RISK = "medium"
"""Low and medium risk may be decided in a chat message unless a policy says otherwise."""
RISK_ORDER = (RiskLevel.LOW, RiskLevel.MEDIUM, RiskLevel.HIGH, RiskLevel.CRITICAL)


def within_risk(level: RiskLevel | str, ceiling: RiskLevel | str) -> bool:
    """Whether ``level`` is at most ``ceiling`` (low < medium < high < critical)."""
    return RISK_ORDER.index(RiskLevel(level)) <= RISK_ORDER.index(RiskLevel(ceiling))


def policy_chat_max_risk(policy: Mapping[str, Any]) -> RiskLevel:
    """A recorded policy's ``chat_max_risk`` (the default when it was not recorded)."""
    return RiskLevel(str(policy.get("chat_max_risk") or DEFAULT_CHAT_MAX_RISK))


@dataclass(frozen=True, slots=True)
class ApprovalPolicy:
    """Who may approve; never the agent's choice.

    ``requester_confirms``: the person the agent acts for confirms their own
    request. ``role``: ``approvals`` distinct holders of the role confirm (after
    the requester, when both are set). The proposing agent never approves; a
    role approver is never the requester and, unless allowed, not the
    beneficiary of the resource. ``retype`` names argument fields the approver
    must type again; ``in_band`` allows confirmation inside an agent client.
    ``surfaces`` names where decisions may come from (``page``, ``api``, ``mcp``
    or an OAuth client id such as ``jdk8-crm``); empty means the deployment's list.
    ``device``: ``required`` — each approval is signed by the approver's
    passkey over this exact decision; ``or_retype`` — by the passkey when the
    approver has one, else re-typing suffices; ``none``.
    ``max_age`` and ``acr_values`` ask for step-up (OpenID Connect): an approval
    counts only when the approver's identity provider authenticated them at most
    ``max_age`` seconds before, and (when ``acr_values`` is set) with one of those
    authentication context classes; the page sends the person to the provider with
    both, and the decision records the ``acr`` and ``auth_time`` it returned.
    ``chat_max_risk``: the highest risk level a chat surface (``slack``, ``teams``)
    may decide; above it the message links to the page instead of offering buttons,
    and the gate refuses a chat decision (``surface_not_allowed``).
    """

    role: str | None = None
    requester_confirms: bool = False
    approvals: int = 1
    beneficiary_may_approve: bool = False
    retype: tuple[str, ...] = ()
    in_band: bool = False
    version: str = "1"
    surfaces: tuple[str, ...] = ()
    device: str = "none"
    chat_max_risk: str = DEFAULT_CHAT_MAX_RISK
    max_age: int | None = None
    acr_values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.role is not None and not ROLE_NAME.fullmatch(self.role):
            raise ValueError(
                f"role {self.role!r} is not a role name: letters, digits and _ . : / - "
                "(no spaces), as the identity token's roles claim carries it, e.g. "
                "'email_approver'"
            )
        if self.chat_max_risk not in set(RiskLevel):
            raise ValueError("chat_max_risk is low, medium, high or critical")
        if self.device not in ("none", "required", "or_retype"):
            raise ValueError("device is none, required or or_retype")
        if self.max_age is not None and (
            isinstance(self.max_age, bool) or not 0 <= self.max_age <= MAX_STEP_UP_AGE
        ):
            raise ValueError(f"max_age is 0 to {MAX_STEP_UP_AGE} seconds")
        if any(not _ACR.fullmatch(value) for value in self.acr_values):
            raise ValueError("acr_values are authentication context class names, no spaces")
        if self.role is None and not self.requester_confirms:
            raise ValueError("a policy needs a role, the requester's confirmation, or both")
        if self.approvals < 1:
            raise ValueError("approvals must be at least 1")

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "requester_confirms": self.requester_confirms,
            "approvals": self.approvals,
            "beneficiary_may_approve": self.beneficiary_may_approve,
            "retype": list(self.retype),
            "in_band": self.in_band,
            "version": self.version,
            "surfaces": list(self.surfaces),
            # Only when asked for, so policies without them keep their recorded form.
            **({"device": self.device} if self.device != "none" else {}),
            **(
                {"chat_max_risk": self.chat_max_risk}
                if self.chat_max_risk != DEFAULT_CHAT_MAX_RISK
                else {}
            ),
            **({"max_age": self.max_age} if self.max_age is not None else {}),
            **({"acr_values": list(self.acr_values)} if self.acr_values else {}),
        }

    @property
    def step_up(self) -> bool:
        """Whether an approval needs a fresh or stronger identity-provider authentication."""
        return self.max_age is not None or bool(self.acr_values)


@dataclass(frozen=True, slots=True)
class ResourceState:
    """What the authorize/read-state step observed about the target."""

    resource_id: str
    version: str
    summary: dict[str, Any] = field(default_factory=dict)
    beneficiary: str | None = None


@dataclass(frozen=True, slots=True, init=False)
class PreviewField:
    """One argument as the person sees it: its label, machine value and display value.

    ``display_value`` defaults to the machine value as text (``—`` for ``None``).
    ``unit`` says what the machine value counts, for numbers whose unit is not in
    the display (money in minor units: ``"fen (1/100 CNY)"``); the page shows a note
    for each field that has one, and none otherwise. ``currency`` (ISO 4217) says the
    machine value is an amount in that currency's minor units, so each person's page
    also writes it as their locale does (``¥199.00``, ``人民币 199.00 元``); the recorded
    display value and the machine value never change.
    """

    name: str
    label: str
    machine_value: Any
    display_value: str
    unit: str | None
    currency: str | None

    def __init__(
        self,
        name: str,
        label: str,
        machine_value: Any,
        display_value: str | None = None,
        *,
        unit: str | None = None,
        currency: str | None = None,
    ) -> None:
        shown = display_text(machine_value) if display_value is None else display_value
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "machine_value", machine_value)
        object.__setattr__(self, "display_value", shown)
        object.__setattr__(self, "unit", unit)
        object.__setattr__(self, "currency", currency)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "label": self.label,
            "machine_value": self.machine_value,
            "display_value": self.display_value,
        }
        if self.unit is not None:
            data["unit"] = self.unit
        if self.currency is not None:
            data["currency"] = self.currency  # only when set: older snapshots keep their form
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PreviewField:
        return cls(
            data["name"],
            data["label"],
            data["machine_value"],
            data["display_value"],
            unit=data.get("unit"),
            currency=data.get("currency"),
        )


def display_text(value: Any) -> str:
    """A machine value as a person reads it when the tool gives no display value."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return ", ".join(display_text(item) for item in value)
    return str(value)


def typed_form(text: str) -> str:
    """What re-typing compares: compatibility forms folded, every run of white space one space.

    Applied to what the page displays and to what the person typed, so the
    value a person reads (a line break shows as a break, not as ``\\n``) is
    the value they may type.
    """
    return " ".join(unicodedata.normalize("NFKC", text).split())


@dataclass(frozen=True, slots=True)
class Preview:
    """What a person sees before deciding, rendered from the snapshot only."""

    title: str
    description: str
    fields: tuple[PreviewField, ...]
    impact: str
    reversibility: str
    external_reach: str = ""
    facts: tuple[str, ...] = ()

    def field(self, name: str) -> PreviewField | None:
        return next((f for f in self.fields if f.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "description": self.description,
            "fields": [f.to_dict() for f in self.fields],
            "impact": self.impact,
            "reversibility": self.reversibility,
            "external_reach": self.external_reach,
            "facts": list(self.facts),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Preview:
        return cls(
            title=data["title"],
            description=data["description"],
            fields=tuple(PreviewField.from_dict(f) for f in data.get("fields") or ()),
            impact=data["impact"],
            reversibility=data["reversibility"],
            external_reach=data.get("external_reach") or "",
            facts=tuple(data.get("facts") or ()),
        )


@dataclass(frozen=True, slots=True)
class Clarification:
    """The normalizer's answer when a value is ambiguous: ask, never guess."""

    question: str
    field: str | None = None


ItemStatus = Literal["succeeded", "failed_retryable", "failed_terminal"]


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """One item of a batch write, reported on its own (seed 000: 失败项独立回执).

    ``resource`` is the item's own resource id (``order:ord_5001``); ``request_key`` the
    key the provider received for it (derived from the execution's request key);
    ``provider_reference`` the provider's id for its effect, once it succeeded.
    """

    resource: str
    request_key: str
    status: ItemStatus
    provider_reference: str | None = None
    error_code: str | None = None

    def __post_init__(self) -> None:
        if self.status not in ("succeeded", "failed_retryable", "failed_terminal"):
            raise ValueError("an item succeeded, failed_retryable or failed_terminal")
        if (self.status == "succeeded") != (self.provider_reference is not None):
            raise ValueError("a succeeded item has a provider reference, a failed one none")

    def to_dict(self) -> dict[str, Any]:
        return {
            "resource": self.resource,
            "request_key": self.request_key,
            "status": self.status,
            "provider_reference": self.provider_reference,
            "error_code": self.error_code,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ItemOutcome:
        return cls(
            data["resource"],
            data["request_key"],
            data["status"],
            data.get("provider_reference"),
            data.get("error_code"),
        )


@dataclass(frozen=True, slots=True)
class Succeeded:
    reference: str
    items: tuple[ItemOutcome, ...] = ()
    """A batch: every item's outcome (all succeeded)."""


@dataclass(frozen=True, slots=True)
class RetryableFailure:
    message: str
    items: tuple[ItemOutcome, ...] = ()
    """A batch: the items that succeeded, and those still to attempt with their same keys."""


@dataclass(frozen=True, slots=True)
class TerminalFailure:
    message: str
    code: str = "provider_refused"
    items: tuple[ItemOutcome, ...] = ()
    """A batch: each item's outcome; failed items stay failed, nothing is widened."""


@dataclass(frozen=True, slots=True)
class Pending:
    """lookup(): the provider knows the key but has not finished."""


@dataclass(frozen=True, slots=True)
class NotFoundAtProvider:
    """lookup(): the provider never saw this request key."""


ProviderOutcome = Succeeded | RetryableFailure | TerminalFailure
LookupOutcome = Succeeded | TerminalFailure | Pending | NotFoundAtProvider


class ProviderTimeout(Exception):
    """Raised by an adapter when the answer was lost; the outcome is unknown."""
