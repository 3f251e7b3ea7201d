"""Request bodies: strict, closed objects; unknown fields and wrong types are 400s."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, RootModel

from signoff._model import Decision, DecisionKind

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


class _Deciding(Body):
    expected_version: Annotated[int, Field(ge=1, le=2**31, description="The version you saw")]
    reason: Annotated[str | None, Field(max_length=2000)] = None


Retyped = Annotated[
    dict[str, Annotated[str, Field(max_length=200)]] | None,
    Field(max_length=16, description="Re-typed values of the proposal's retype fields"),
]
Suggestion = Annotated[
    dict[str, Any] | None,
    Field(
        max_length=32,
        description="argument name → suggested value (with `reason` as the note); a note, "
        "fields, or both",
    ),
]


class ApproveRequest(_Deciding):
    decision: Literal[DecisionKind.APPROVE]
    retyped: Retyped = None
    reason_code: None = Field(default=None, description="Only a rejection has one")
    suggestion: None = Field(default=None, description="Only a request for changes has one")
    evidence: Literal["idp"] | None = Field(
        default=None,
        description="`idp`: approve through your identity provider (OpenID CIBA): answered "
        "202 `pending` with an `auth_req_id`; send it back to record the approval once you "
        "approved on your device",
    )
    auth_req_id: Annotated[str | None, Field(min_length=1, max_length=512)] = Field(
        default=None, description="With `evidence: idp`: the pending request to complete"
    )


class RejectRequest(_Deciding):
    decision: Literal[DecisionKind.REJECT]
    reason_code: ReasonCodeName = Field(
        description="One of the reasons the tool offers (`other` always)"
    )
    retyped: None = Field(default=None, description="Only an approval re-types values")
    suggestion: None = Field(default=None, description="Only a request for changes has one")


class RequestChangesRequest(_Deciding):
    decision: Literal[DecisionKind.REQUEST_CHANGES]
    suggestion: Suggestion = None
    reason_code: None = Field(default=None, description="Only a rejection has one")
    retyped: None = Field(default=None, description="Only an approval re-types values")


Deciding = ApproveRequest | RejectRequest | RequestChangesRequest


class DecisionRequest(RootModel[Deciding]):
    """An approval, a rejection or a request for changes; a rejection needs its
    ``reason_code`` (declared, so a generated client knows it before the server says so)."""

    root: Deciding = Field(discriminator="decision")


def as_decision(body: Deciding) -> Decision:
    """The gate's :class:`Decision` for one decision body."""
    return Decision(
        kind=DecisionKind(body.decision),
        expected_version=body.expected_version,
        reason_code=body.reason_code,
        reason=body.reason,
        retyped=None if body.retyped is None else dict(body.retyped),
        suggestion=None if body.suggestion is None else dict(body.suggestion),
    )


class BatchApprove(ApproveRequest):
    proposal_id: Id
    evidence: None = Field(default=None, description="A batch is never approved through the IdP")
    auth_req_id: None = Field(default=None, description="A batch is never approved through the IdP")


class BatchReject(RejectRequest):
    proposal_id: Id


class BatchRequestChanges(RequestChangesRequest):
    proposal_id: Id


BatchDeciding = BatchApprove | BatchReject | BatchRequestChanges


class BatchDecision(RootModel[BatchDeciding]):
    """One decision of a batch: a decision and the proposal it is about."""

    root: BatchDeciding = Field(discriminator="decision")


class BatchRequest(Body):
    decisions: Annotated[
        list[BatchDecision],
        Field(min_length=1, max_length=100, description="Each decided on its own, in order"),
    ]


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


Target = Annotated[
    str, Field(min_length=6, max_length=262, pattern=r"^(role|person):[\x21-\x7e]+$")
]


class ReassignmentRequest(Body):
    """Who may decide the proposal from now on (instead of its role), and why."""

    to: Annotated[list[Target], Field(min_length=1, max_length=20)]
    """``role:NAME`` or ``person:SUBJECT`` entries."""
    reason: Annotated[str, Field(min_length=1, max_length=2000)]


class StopRequest(Body):
    """Why a person ends a failed_retryable execution for good."""

    reason: Annotated[str, Field(min_length=1, max_length=2000)]
