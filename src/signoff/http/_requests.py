"""Request bodies: strict, closed objects; unknown fields and wrong types are 400s."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from signoff._model import DecisionKind

ReasonCodeName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,39}$")]
"""One of the tool's reject reasons (``other`` always; the proposal's tool offers the rest)."""
Id = Annotated[str, Field(min_length=1, max_length=128)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ProposeRequest(Body):
    tool: Annotated[str, Field(min_length=1, max_length=64, description="A catalog tool name")]
    arguments: dict[str, Any] = Field(description="The tool's raw arguments; checked strictly")
    rationale: Annotated[
        str | None, Field(max_length=4000, description="The model's explanation (untrusted)")
    ] = None


class _Deciding(Body):
    expected_version: Annotated[int, Field(ge=1, le=2**31, description="The version you saw")]
    reason: Annotated[str | None, Field(max_length=2000)] = None


class ApproveRequest(_Deciding):
    decision: Literal[DecisionKind.APPROVE]
    retyped: Annotated[
        dict[str, Annotated[str, Field(max_length=200)]] | None,
        Field(max_length=16, description="Re-typed values of the proposal's retype fields"),
    ] = None
    reason_code: None = Field(default=None, description="Only a rejection has one")


class RejectRequest(_Deciding):
    decision: Literal[DecisionKind.REJECT]
    reason_code: ReasonCodeName = Field(
        description="One of the reasons the tool offers (`other` always)"
    )
    retyped: None = Field(default=None, description="Only an approval re-types values")


class DecisionRequest(RootModel[ApproveRequest | RejectRequest]):
    """An approval or a rejection; a rejection needs its ``reason_code`` (declared, so a
    generated client knows it before the server says so)."""

    root: ApproveRequest | RejectRequest = Field(discriminator="decision")


class ExecuteRequest(Body):
    proposal_id: Id
    confirmation_token: Annotated[str, Field(min_length=1, max_length=4096)]


class ResolutionOutcome(enum.StrEnum):
    """What a person found at the provider."""

    SUCCEEDED = "succeeded"
    FAILED_TERMINAL = "failed_terminal"


ProviderReference = Annotated[str, Field(min_length=1, max_length=200)]
Reason = Annotated[str, Field(min_length=1, max_length=2000)]


class ResolvedSucceeded(Body):
    """The provider shows the effect: its reference is required."""

    outcome: Literal[ResolutionOutcome.SUCCEEDED]
    provider_reference: ProviderReference
    reason: Reason


class ResolvedFailed(Body):
    """The provider certainly never acted on the request key."""

    outcome: Literal[ResolutionOutcome.FAILED_TERMINAL]
    provider_reference: ProviderReference | None = None
    reason: Reason


class ResolveRequest(RootModel[ResolvedSucceeded | ResolvedFailed]):
    """What a person found at the provider for an unknown or needs_attention execution;
    ``succeeded`` needs the provider's reference."""

    root: ResolvedSucceeded | ResolvedFailed = Field(discriminator="outcome")


class RevokeRequest(Body):
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class StopRequest(Body):
    """Why a person ends a failed_retryable execution for good."""

    reason: Annotated[str, Field(min_length=1, max_length=2000)]
