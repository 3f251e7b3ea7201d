"""The developer's declaration of a write tool."""

from __future__ import annotations

import abc
import json
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, ClassVar, Generic, TypeVar

import pydantic

from signoff._model import Principal
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


class StrictArgs(pydantic.BaseModel):
    """Base for tool arguments: unknown fields, bool-as-int and float-as-int refused."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)


ArgsT = TypeVar("ArgsT", bound=StrictArgs)


class WriteTool(abc.ABC, Generic[ArgsT]):
    """A side-effecting tool that signoff guards.

    Subclasses set the class attributes and implement the abstract methods;
    the gate calls them in the order of PROTOCOL.md: validate, normalize,
    read state, preview, risk, policy — and later execute or lookup.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    description: ClassVar[str]
    side_effect: ClassVar[SideEffect]
    args_model: type[ArgsT]
    ttl: ClassVar[timedelta] = timedelta(minutes=15)
    # Reconciliation policy (docs/ADAPTERS.md): when lookup() says the provider never
    # saw the request key, attempt again with the same key (auto_retry) until
    # max_attempts; after max_lookups inconclusive lookups a person must look.
    auto_retry: ClassVar[bool] = True
    max_attempts: ClassVar[int] = 5
    max_lookups: ClassVar[int] = 10

    def parse(self, raw: Mapping[str, Any] | str | bytes) -> ArgsT:
        """Validate raw model arguments strictly; JSON text or a mapping."""
        if isinstance(raw, Mapping):
            try:
                raw = json.dumps(raw, allow_nan=False)
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

    @abc.abstractmethod
    def read_state(self, args: ArgsT, principal: Principal) -> ResourceState:
        """Authorize the request and read the target's current state and version.

        Raise a :class:`signoff.exceptions.Refusal` (e.g. ``NotFound``) to refuse.
        """

    @abc.abstractmethod
    def preview(self, args: ArgsT, state: ResourceState) -> Preview: ...

    def risk(self, args: ArgsT, state: ResourceState) -> Risk:
        return Risk(RiskLevel.MEDIUM)

    @abc.abstractmethod
    def policy(self, args: ArgsT, state: ResourceState, risk: Risk) -> ApprovalPolicy: ...

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


def _errors(exc: pydantic.ValidationError) -> list[dict[str, Any]]:
    return [
        {"loc": [str(part) for part in err["loc"]], "type": err["type"], "msg": err["msg"]}
        for err in exc.errors(include_url=False, include_input=False)
    ]
