"""Request bodies: strict, closed objects; unknown fields and wrong types are 400s."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

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
    mandate_id: Id | None = Field(
        default=None,
        description="Confirm under this standing approval (POST /v1/mandates): a write it "
        "covers is confirmed at once; one it does not is refused naming the constraint",
    )

    supersedes: Annotated[
        Id | None,
        Field(description="A proposal returned with changes requested that this one answers"),
    ] = None


class MandateRequest(Body):
    tool: Annotated[str, Field(min_length=1, max_length=64, description="A catalog tool name")]
    constraints: dict[str, Any] = Field(
        description="currency, max_amount_minor, total_amount_minor, max_count, resources, "
        "agents (docs/POLICIES.md); no constraint, no mandate"
    )
    expires_in_seconds: Annotated[
        int, Field(ge=1, le=366 * 86400, description="The validity window, from now")
    ]


class MandateRevocationRequest(Body):
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class DecisionRequest(Body):
    decision: Literal["approve", "reject", "request_changes"]
    expected_version: Annotated[int, Field(ge=1, le=2**31, description="The version you saw")]
    reason_code: ReasonCodeName | None = Field(
        default=None,
        description="Required to reject: one of the reasons the tool offers (`other` always)",
    )
    reason: Annotated[str | None, Field(max_length=2000)] = None
    retyped: Annotated[
        dict[str, Annotated[str, Field(max_length=200)]] | None,
        Field(max_length=16, description="Re-typed values of the proposal's retype fields"),
    ] = None
    suggestion: Annotated[
        dict[str, Any] | None,
        Field(
            max_length=32,
            description="request_changes: argument name → suggested value (with `reason` as "
            "the note)",
        ),
    ] = None


class BatchDecision(DecisionRequest):
    proposal_id: Id


class BatchRequest(Body):
    decisions: Annotated[
        list[BatchDecision],
        Field(min_length=1, max_length=100, description="Each decided on its own, in order"),
    ]


class ExecuteRequest(Body):
    proposal_id: Id
    confirmation_token: Annotated[str, Field(min_length=1, max_length=4096)]


class ResolveRequest(Body):
    """What a person found at the provider for an unknown or needs_attention execution."""

    outcome: Literal["succeeded", "failed_terminal"]
    provider_reference: Annotated[str | None, Field(min_length=1, max_length=200)] = None
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class RevokeRequest(Body):
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class StopRequest(Body):
    """Why a person ends a failed_retryable execution for good."""

    reason: Annotated[str, Field(min_length=1, max_length=2000)]
