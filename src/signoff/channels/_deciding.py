"""A decision from a chat button or modal, through the one ``Gate.decide`` path.

The chat never decides anything itself: it turns the click into a
:class:`~signoff.Decision` for the linked person (surface ``slack`` or
``teams``) and says in words what the gate answered. The idempotency key is
derived from who clicked what on which version, so a chat platform's
redelivery of the same click replays the first answer, and a second click on
a decided proposal says what happened instead of deciding again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from signoff._canonical import fingerprint
from signoff._model import Decision, DecisionKind, DecisionResult, Principal, Proposal
from signoff.channels._card import when
from signoff.exceptions import (
    IdempotencyKeyReused,
    InvalidState,
    NotFound,
    RetypeMismatch,
    SignoffError,
    VersionConflict,
)
from signoff.store._sql import ChannelLink

if TYPE_CHECKING:
    from signoff import Gate


@dataclass(frozen=True, slots=True)
class ChatDecision:
    proposal_id: str
    version: int
    kind: DecisionKind
    reason_code: str | None = None
    reason: str | None = None
    retyped: dict[str, str] | None = None
    suggestion: dict[str, Any] | None = None

    def decision(self) -> Decision:
        return Decision(
            self.kind,
            self.version,
            self.reason_code,
            self.reason or None,
            retyped=self.retyped,
            suggestion=self.suggestion,
        )


@dataclass(frozen=True, slots=True)
class Answer:
    """What the person is told; ``result`` when the gate recorded (or replayed) a decision."""

    text: str
    result: DecisionResult | None = None
    refusal: SignoffError | None = None

    @property
    def retype_failed(self) -> bool:
        return isinstance(self.refusal, RetypeMismatch)


def chat_key(surface: str, workspace: str, user_id: str, decision: ChatDecision) -> str:
    """Stable per (chat user, proposal, version, what they chose): a redelivery replays."""
    return (
        "chat_"
        + fingerprint(
            "chat-decision",
            {
                "surface": surface,
                "workspace": workspace,
                "user": user_id,
                "proposal_id": decision.proposal_id,
                "version": decision.version,
                "decision": decision.kind.value,
                "reason_code": decision.reason_code,
                "reason": decision.reason,
                "retyped": decision.retyped,
                "suggestion": decision.suggestion,
            },
        )[:64]
    )


def decide(gate: Gate, principal: Principal, decision: ChatDecision, *, key: str) -> Answer:
    try:
        result = gate.decide(
            principal, decision.proposal_id, decision.decision(), idempotency_key=key
        )
    except (InvalidState, IdempotencyKeyReused) as exc:
        return Answer(_already(gate, principal, decision.proposal_id, exc), refusal=exc)
    except VersionConflict as exc:
        return Answer(
            "The proposal changed since this message was drawn; the message now shows it as it "
            "is. Read it again before deciding.",
            refusal=exc,
        )
    except SignoffError as exc:
        return Answer(f"Nothing was decided: {exc.message} ({exc.code}).", refusal=exc)
    verb = {
        DecisionKind.APPROVE: "approved",
        DecisionKind.REJECT: "rejected",
        DecisionKind.REQUEST_CHANGES: "sent back with a request for changes",
    }[decision.kind]
    if result.duplicate:
        return Answer(f"You already {verb} this proposal; nothing changed.", result=result)
    status = result.proposal.status.value
    if status == "confirmed":
        tail = " It is confirmed: the agent may now run it, once."
    elif status == "awaiting_confirmation":
        tail = " More approvals are needed before it can run."
    elif status == "changes_requested":
        tail = " The agent is told; nothing will run unless a new proposal is approved."
    else:
        tail = " Nothing will run."
    return Answer(f"You {verb} “{result.proposal.preview.title}”.{tail}", result=result)


def _already(gate: Gate, principal: Principal, proposal_id: str, exc: SignoffError) -> str:
    """A second click: what happened to the proposal, and by whom."""
    try:
        proposal = gate.proposal(principal, proposal_id)
    except NotFound:
        return f"Nothing was decided: {exc.message}."
    return "This proposal was already decided: " + describe(proposal) + ". Nothing changed."


def describe(proposal: Proposal) -> str:
    last = proposal.approvals[-1] if proposal.approvals else None
    status = proposal.status.value.replace("_", " ")
    if last is None:
        return f"it is {status}"
    verb = {
        DecisionKind.APPROVE: "approved",
        DecisionKind.REJECT: "rejected",
        DecisionKind.REQUEST_CHANGES: "requested changes on",
    }[last.kind]
    return f"{last.approver} {verb} it at {when(last.decided_at)}; it is {status}"


def suggested(text: str) -> Any:
    """A suggested value as typed: JSON when it reads as JSON (19900, null, "x"), else text."""
    import json

    value = text.strip()[:200]
    try:
        return json.loads(value)
    except ValueError:
        return value


def may_decide(gate: Gate, link: ChannelLink, proposal: Proposal) -> bool:
    """Whether the linked person is one who may decide: told of it, checked again on click."""
    return person_may_decide(gate, link.tenant, link.subject, link.roles, proposal)


def person_may_decide(
    gate: Gate, tenant: str, subject: str, roles: Iterable[str], proposal: Proposal
) -> bool:
    """The requester when they confirm; a holder of the role the directory still grants
    (unless an admin reassigned the proposal); anyone an escalation or reassignment named."""
    if tenant != proposal.tenant:
        return False
    if subject == proposal.requester_subject:
        return bool(proposal.policy.get("requester_confirms"))
    held = set(roles)
    directory = gate.directory
    assignment = gate.assignment(proposal)
    if named(assignment.targets, tenant, subject, held, gate):
        return True
    role = proposal.required_role
    if assignment.role_replaced or role is None or role not in held:
        return False
    return directory is None or directory.holds_role(tenant, subject, role)


def named(
    targets: Iterable[str], tenant: str, subject: str, roles: Iterable[str], gate: Gate
) -> bool:
    """Whether ``person:SUBJECT`` or a ``role:NAME`` the person holds is among ``targets``."""
    held = set(roles)
    directory = gate.directory
    for target in targets:
        kind, _, name = target.partition(":")
        if kind == "person" and name == subject:
            return True
        if (
            kind == "role"
            and name in held
            and (directory is None or directory.holds_role(tenant, subject, name))
        ):
            return True
    return False
