"""The protocol's records: who asks, what was proposed, decided and executed."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from signoff.catalog._types import ItemOutcome, Preview, Risk

PAGE_SURFACE = "page"
"""The surface name of the confirmation page; no identity token may claim it as its client."""
MCP_SURFACE = "mcp"
"""The surface of in-band confirmation inside an MCP client (elicitation); reserved too."""
API_SURFACE = "api"
"""The surface of a bearer token that names no client (``azp``/``client_id``); reserved."""
SLACK_SURFACE = "slack"
"""Decisions made with Slack buttons and modals (``signoff.channels``); reserved too."""
TEAMS_SURFACE = "teams"
"""Decisions made with Microsoft Teams Adaptive Cards (``signoff.channels``); reserved too."""
CHAT_SURFACES = frozenset({SLACK_SURFACE, TEAMS_SURFACE})
"""Surfaces where a person decides from a chat message: the policy's ``chat_max_risk`` applies."""
RESERVED_SURFACES = frozenset({PAGE_SURFACE, MCP_SURFACE, API_SURFACE, *CHAT_SURFACES})
"""Surface names signoff gives its own surfaces; no token's client may claim one."""


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated caller. ``actor`` is the agent acting for ``subject`` (RFC 8693).

    ``client`` is the approval surface the call came through: the OAuth client
    the identity token was issued to (``azp``/``client_id``, e.g. ``jdk8-crm``),
    :data:`PAGE_SURFACE` for the confirmation page or :data:`MCP_SURFACE` for
    in-band confirmation; ``None`` when the token names no client.
    ``auth_time`` and ``acr`` are when and how the identity provider last
    authenticated the person (the token's OIDC claims), if it said so; a step-up
    policy (``ApprovalPolicy.max_age``, ``acr_values``) decides on them.

    ``issuer`` is the identity provider that vouched for the caller (the token's
    ``iss``): a person is (issuer, subject), so a token of another issuer naming the
    same subject is not the requester. ``signed_in_client``: for a page session, the
    client of the token it was opened with; the surface rule applies to it as well.
    """

    subject: str
    tenant: str
    roles: frozenset[str] = frozenset()
    actor: str | None = None
    client: str | None = None
    auth_time: datetime | None = None
    acr: str | None = None
    issuer: str | None = None
    signed_in_client: str | None = None

    def __post_init__(self) -> None:
        if not self.subject or not self.tenant:
            raise ValueError("a principal needs a subject and a tenant")

    @property
    def is_agent(self) -> bool:
        return self.actor is not None

    def label(self) -> str:
        return self.subject if self.actor is None else f"{self.actor} for {self.subject}"


class ProposalStatus(enum.StrEnum):
    AWAITING_CONFIRMATION = "awaiting_confirmation"
    DECLINED = "declined"
    CHANGES_REQUESTED = "changes_requested"
    """A reviewer returned it with a suggestion: the agent may propose anew, naming it."""
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    CONFIRMED = "confirmed"
    REVOKED = "revoked"
    EXECUTING = "executing"
    SUCCEEDED = "succeeded"
    FAILED_RETRYABLE = "failed_retryable"
    FAILED_TERMINAL = "failed_terminal"
    UNKNOWN = "unknown"
    NEEDS_ATTENTION = "needs_attention"

    @property
    def is_terminal(self) -> bool:
        return self in _TERMINAL_PROPOSAL


_TERMINAL_PROPOSAL = frozenset(
    {
        ProposalStatus.DECLINED,
        ProposalStatus.CHANGES_REQUESTED,
        ProposalStatus.CANCELLED,
        ProposalStatus.EXPIRED,
        ProposalStatus.REVOKED,
        ProposalStatus.SUCCEEDED,
        ProposalStatus.FAILED_TERMINAL,
    }
)


class ExecutionStatus(enum.StrEnum):
    PREPARED = "prepared"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED_RETRYABLE = "failed_retryable"
    FAILED_TERMINAL = "failed_terminal"
    UNKNOWN = "unknown"
    NEEDS_ATTENTION = "needs_attention"

    @property
    def is_terminal(self) -> bool:
        return self in (ExecutionStatus.SUCCEEDED, ExecutionStatus.FAILED_TERMINAL)


class DecisionKind(enum.StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    REQUEST_CHANGES = "request_changes"
    """Neither yes nor no: returned to the agent with a structured suggestion."""


class ReasonCode(enum.StrEnum):
    """The usual reasons to reject; a tool offers its own set (``WriteTool.reject_reasons``)."""

    WRONG_AMOUNT = "wrong_amount"
    WRONG_TARGET = "wrong_target"
    POLICY = "policy"
    SUSPICIOUS = "suspicious"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Decision:
    """A structured decision; free text is never one."""

    kind: DecisionKind
    expected_version: int
    reason_code: str | None = None
    """One of the tool's reject reasons (a :class:`ReasonCode` or the tool's own code)."""
    reason: str | None = None
    retyped: dict[str, str] | None = None
    device: dict[str, Any] | None = None
    """A WebAuthn assertion over this decision's challenge (docs/PROOF.md), when signed."""
    idp: dict[str, Any] | None = None
    """``{"token": …}``: the identity provider's token (CIBA) vouching for this approval."""
    suggestion: dict[str, Any] | None = None
    """For ``request_changes``: argument fields with the values the reviewer suggests."""


DELEGATE_CODE = "delegate"


@dataclass(frozen=True, slots=True)
class Approval:
    """One recorded decision on a proposal."""

    approver: str
    kind: DecisionKind
    step: str
    reason_code: str | None
    reason: str | None
    decided_at: datetime

    @property
    def delegate_of(self) -> str | None:
        """Whom the approver stood in for (a delegation), kept as ``reason_code="delegate"``
        with the delegator in ``reason``; ``None`` when they decided as themselves."""
        if self.kind is DecisionKind.APPROVE and self.reason_code == DELEGATE_CODE:
            return self.reason
        return None

    def label(self) -> str:
        """``bob, as delegate of alice`` — or just the approver."""
        return (
            self.approver
            if self.delegate_of is None
            else (f"{self.approver}, as delegate of {self.delegate_of}")
        )

    @property
    def suggestion(self) -> dict[str, Any] | None:
        """A request for changes: ``{"note": …, "fields": {name: suggested value}}``.

        Kept as canonical JSON in the decision's ``reason`` (the decisions table and
        the write step are unchanged); ``None`` for an approval or a rejection.
        """
        if self.kind is not DecisionKind.REQUEST_CHANGES or not self.reason:
            return None
        import json

        try:
            found = json.loads(self.reason)
        except ValueError:
            return {"note": self.reason, "fields": {}}
        return found if isinstance(found, dict) else None


@dataclass(frozen=True, slots=True)
class Proposal:
    """An immutable snapshot of one requested write, plus its moving status."""

    proposal_id: str
    action_id: str
    tenant: str
    requester_subject: str
    requester_actor: str | None
    tool: str
    tool_version: str
    arguments: dict[str, Any]
    args_digest: str
    resource_id: str
    state_version: str
    state: dict[str, Any]
    risk: Risk
    policy: dict[str, Any]
    preview: Preview
    rationale: str | None
    request_key: str
    status: ProposalStatus
    version: int
    created_at: datetime
    expires_at: datetime
    approvals: tuple[Approval, ...] = ()

    @property
    def resource(self) -> str:
        """The target's id under the name the HTTP and MCP answers give it (``resource``).

        The same value as :attr:`resource_id`, which is what :class:`ResourceState` calls it
        and stays as it was.
        """
        return self.resource_id

    @property
    def required_role(self) -> str | None:
        role = self.policy.get("role")
        return role if isinstance(role, str) else None

    @property
    def supersedes(self) -> str | None:
        """The proposal this one replaces after a reviewer requested changes (frozen with it)."""
        found = self.state.get("supersedes")
        return found if isinstance(found, str) else None

    @property
    def changes_requested(self) -> Approval | None:
        return next((a for a in self.approvals if a.kind is DecisionKind.REQUEST_CHANGES), None)

    @property
    def policy_version(self) -> str:
        """The digest of the effective policy it was proposed under (its token binds it)."""
        return str(self.policy.get("version", ""))

    @property
    def mandate(self) -> dict[str, Any] | None:
        """For a write confirmed under a standing approval: the mandate, its approvers, what
        this write debited and what was left after it (kept with the snapshot)."""
        cover = self.state.get("mandate")
        return cover if isinstance(cover, dict) else None


@dataclass(frozen=True, slots=True)
class Receipt:
    """Proof of one execution (PROTOCOL.md rule 10)."""

    execution_id: str
    proposal_id: str
    action_id: str
    request_key: str
    operation: str
    status: ExecutionStatus
    args_digest: str
    provider_reference: str | None
    approvers: tuple[str, ...]
    completed_at: datetime | None
    items: tuple[ItemOutcome, ...] = ()
    """A batch: each item's outcome, request key and provider reference, on its own."""
    mandate: dict[str, Any] | None = None
    """A write under a mandate: its id, approvers, the amount and the budget left after it."""
    on_behalf_of: tuple[tuple[str, str], ...] = ()
    """(approver, delegator) for each approver who stood in for someone (a delegation)."""

    def approver_labels(self) -> tuple[str, ...]:
        """``bob, as delegate of alice`` for a delegate, else the approver."""
        stood_in = dict(self.on_behalf_of)
        return tuple(
            a if a not in stood_in else f"{a}, as delegate of {stood_in[a]}" for a in self.approvers
        )


@dataclass(frozen=True, slots=True)
class Execution:
    execution_id: str
    proposal_id: str
    tenant: str
    token_id: str
    request_key: str
    status: ExecutionStatus
    attempts: int
    provider_reference: str | None
    error_code: str | None
    error_message: str | None
    created_at: datetime
    updated_at: datetime
    lease_until: datetime | None = None
    items: tuple[ItemOutcome, ...] = ()
    """A batch: each item's outcome as the last attempt or lookup reported it."""


NOT_STARTED = "not_started"
"""``DecisionResult.tool_status`` while no execution of the proposal exists."""


def audit_reference(tenant: str, seq: int) -> str:
    """An audit event's stable id: ``<tenant>:<seq>``, its place in the tenant's hash chain."""
    return f"{tenant}:{seq}"


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """The decision receipt (seed 003): what this decision did, stable across its replays.

    ``audit_id`` names the decision's audit event (``<tenant>:<seq>``); ``status`` and
    ``version`` are the proposal's as this decision left them; ``duplicate`` is true when
    the Idempotency-Key was answered before. ``tool_status`` says where the write is *now*:
    ``not_started`` until the requester executes, then the execution's status. ``proposal``
    is the proposal as it is now (a replay after the write ran shows it ``succeeded``).
    """

    proposal: Proposal
    duplicate: bool
    audit_id: str
    status: ProposalStatus
    version: int
    tool_status: str = NOT_STARTED
    confirmation_token: str | None = None

    @property
    def action_id(self) -> str:
        """The business action the decision is about; the same on every replay."""
        return self.proposal.action_id


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    execution: Execution
    receipt: Receipt | None
    duplicate: bool = False
    signed_receipt: str | None = None
    """The receipt as a JWS with inclusion proofs (docs/PROOF.md), when the gate signs."""
