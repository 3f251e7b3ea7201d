"""The developer's declaration of a write tool (docs/TOOLS.md walks through it)."""

from __future__ import annotations

import abc
import json
import typing
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar, Generic, TypeVar

import pydantic

from signoff._model import Principal
from signoff.catalog._thresholds import threshold_in_effect
from signoff.catalog._types import (
    ApprovalPolicy,
    Clarification,
    LookupOutcome,
    Preview,
    ProviderOutcome,
    ResourceState,
    Risk,
    RiskLevel,
    SideEffect,
)
from signoff.exceptions import InvalidArguments

OTHER_REASON = "other"
REASON_LABELS: Mapping[str, str] = {
    "wrong_amount": "Wrong amount",
    "wrong_target": "Wrong target or recipient",
    "policy": "Against policy",
    "suspicious": "Looks suspicious",
    OTHER_REASON: "Other (explain below)",
}


class StrictArgs(pydantic.BaseModel):
    """Base for tool arguments: unknown fields, bool-as-int and float-as-int refused."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)


ArgsT = TypeVar("ArgsT", bound=StrictArgs)


class WriteTool(abc.ABC, Generic[ArgsT]):
    """A side-effecting tool that signoff guards.

    Declare ``name``, ``description``, ``side_effect`` and who approves
    (``approver_role`` or ``requester_confirms``, or a ``policy()``), and write
    ``preview``, ``execute`` and ``lookup``. The arguments model comes from
    ``WriteTool[YourArgs]``. The gate calls the hooks in the order of
    PROTOCOL.md: parse, normalize, read_state, preview, risk, policy — and
    later execute, or lookup to reconcile.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str]
    side_effect: ClassVar[SideEffect]
    args_model: type[ArgsT]
    ttl: ClassVar[timedelta] = timedelta(minutes=15)
    # Who approves, when it does not depend on the arguments (else define policy()).
    approver_role: ClassVar[str | None] = None
    approvals: ClassVar[int] = 1
    requester_confirms: ClassVar[bool] = False
    retype: ClassVar[tuple[str, ...]] = ()
    in_band: ClassVar[bool] = False
    # Reason codes a person may give to reject; "other" is always offered too.
    reject_reasons: ClassVar[tuple[str, ...]] = ("wrong_target", "policy", "suspicious")
    # Reconciliation policy (docs/ADAPTERS.md): when lookup() says the provider never
    # saw the request key, attempt again with the same key (auto_retry) until
    # max_attempts; after max_lookups inconclusive lookups a person must look.
    auto_retry: ClassVar[bool] = True
    max_attempts: ClassVar[int] = 5
    max_lookups: ClassVar[int] = 10
    # The risk thresholds risk() reads with self.threshold(name), with their defaults; a
    # deployment's policy file may set them per tool and tenant (docs/POLICIES.md).
    thresholds: ClassVar[Mapping[str, int | str]] = {}
    # Standing approvals (mandates, docs/POLICIES.md): which canonical argument is the
    # amount (an integer in minor units) and which its ISO 4217 currency, and whether
    # mandates may cover this tool at all (the policy file may say otherwise).
    amount_argument: ClassVar[str | None] = None
    currency_argument: ClassVar[str | None] = None
    mandates: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "args_model" not in cls.__dict__:
            model = _args_model_of(cls)
            if model is not None:
                cls.args_model = model  # type: ignore[assignment]

    def threshold(self, name: str) -> Any:
        """A risk threshold: the policy file's value for this tool and tenant while the gate
        asks for the risk, else the default declared in ``thresholds``."""
        return threshold_in_effect(name, self.thresholds)

    @classmethod
    def reads_state(cls) -> bool:
        """Whether the tool reads a business state (it overrides ``read_state``)."""
        return cls.read_state is not WriteTool.read_state

    def reasons(self) -> dict[str, str]:
        """The reject reasons offered for this tool, code → label, ``other`` last."""
        codes = [c for c in self.reject_reasons if c != OTHER_REASON] + [OTHER_REASON]
        return {c: REASON_LABELS.get(c) or c.replace("_", " ").capitalize() for c in codes}

    def parse(self, raw: Mapping[str, Any] | str | bytes) -> ArgsT:
        """Validate raw model arguments strictly; JSON text or a mapping."""
        if isinstance(raw, Mapping):
            try:
                raw = _ARGUMENTS_JSON(raw)
            except (TypeError, ValueError) as exc:
                raise InvalidArguments(f"arguments are not JSON: {exc}") from exc
        try:
            return self.args_model.model_validate_json(raw, strict=True)
        except pydantic.ValidationError as exc:
            raise InvalidArguments(
                "arguments do not match the tool's schema",
                tool=self.name,
                errors=_errors(exc),
            ) from exc

    def load(self, canonical: Mapping[str, Any]) -> ArgsT:
        """Rebuild arguments from the stored canonical form."""
        return self.parse(canonical)

    def canonical(self, args: ArgsT) -> dict[str, Any]:
        return args.model_dump(mode="json")

    def normalize(self, args: ArgsT, principal: Principal) -> ArgsT | Clarification:
        """Explicit units and defaults; a :class:`Clarification` when ambiguous."""
        return args

    def read_state(self, args: ArgsT, principal: Principal) -> ResourceState:
        """Authorize the request and read the target's current state and version.

        Raise a :class:`signoff.exceptions.Refusal` (e.g. ``NotFound``) to refuse.
        The default is for tools with no prior state (send an e-mail, open a
        ticket): the resource is ``<name>:new`` at version ``0``, and the page
        shows no state panel.
        """
        return ResourceState(resource_id=f"{self.name}:new", version="0")

    @abc.abstractmethod
    def preview(self, args: ArgsT, state: ResourceState) -> Preview:
        """What the person reads before deciding: every value the write will use."""

    def risk(self, args: ArgsT, state: ResourceState) -> Risk:
        return Risk(RiskLevel.MEDIUM)

    def policy(self, args: ArgsT, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        """Who approves; by default the class attributes ``approver_role`` and the rest."""
        return ApprovalPolicy(
            role=self.approver_role,
            requester_confirms=self.requester_confirms,
            approvals=self.approvals,
            retype=self.retype,
            in_band=self.in_band,
        )

    @abc.abstractmethod
    def execute(self, args: ArgsT, request_key: str, expected: ResourceState) -> ProviderOutcome:
        """Perform the write once, passing ``request_key`` as the provider's idempotency key.

        The write must check ``expected.version`` with a conditional update and
        answer ``TerminalFailure(code="state_changed")`` when it no longer holds.
        Raise :class:`ProviderTimeout` (or anything) when the outcome is unknown.
        """

    @abc.abstractmethod
    def lookup(self, request_key: str) -> LookupOutcome:
        """Ask the provider what became of ``request_key`` (for reconciliation)."""


def _args_model_of(cls: type) -> type[StrictArgs] | None:
    """``X`` from ``class T(WriteTool[X])``, looking through intermediate generic bases."""
    for base in getattr(cls, "__orig_bases__", ()):
        origin = typing.get_origin(base)
        if isinstance(origin, type) and issubclass(origin, WriteTool):
            for arg in typing.get_args(base):
                if isinstance(arg, type) and issubclass(arg, pydantic.BaseModel):
                    return arg  # type: ignore[return-value]
    return None


def _errors(exc: pydantic.ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(part) for part in err["loc"]], "type": err["type"], "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]


# `json.dumps(raw, allow_nan=False)`, one encoder for the process (pydantic reads the text).
_ARGUMENTS_JSON = json.JSONEncoder(allow_nan=False).encode
