"""Follow-ups of a pending proposal: reminders, escalation, reassignment by an admin.

The policy's ``[tools.X.escalation]`` (carried in the proposal's frozen policy) says
when: ``remind_after`` delays and ``escalate_after``, counted from the proposal's
creation on the server clock. A reminder tells the people who may decide again; the
escalation makes its ``targets`` eligible to decide *this* proposal (the role's step,
under the same separation of duties: the requester never). Each step is one row
whose insert only one worker wins, with its audit event in the same transaction,
so the notifier (the audit chain is the outbox) sends it once. Nothing here touches
``expires_at``: a reminder never extends a deadline, and nothing is due after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from signoff._clock import to_micros
from signoff._model import Principal, Proposal, ProposalStatus
from signoff.exceptions import Forbidden, InvalidRequest, InvalidState
from signoff.gate._circle import ADMIN_ROLE, load_visible
from signoff.gate._context import GateContext, log
from signoff.gate._policy import holds_role
from signoff.policy._fields import ROLE
from signoff.store._q_followups import REASSIGNED
from signoff.store._sql import SqlTransaction

REMIND = "remind"
ESCALATE = "escalate"
MAX_TARGETS = 20
MAX_REASON = 2000


@dataclass(frozen=True, slots=True)
class Followup:
    """One due step of one proposal: ``remind:N`` (N from 1) or ``escalate``."""

    step: str
    after_seconds: int
    targets: tuple[str, ...] = ()


@dataclass(slots=True)
class FollowupPass:
    """What one pass did: steps this worker won, and proposals it expired."""

    reminded: list[str] = field(default_factory=list)
    escalated: list[str] = field(default_factory=list)
    expired: int = 0


def due_followups(proposal: Proposal, now_micros: int, done: set[str]) -> list[Followup]:
    """The steps of ``proposal`` whose time has come and that nobody took yet."""
    escalation = proposal.policy.get("escalation") or {}
    if proposal.status is not ProposalStatus.AWAITING_CONFIRMATION:
        return []
    if now_micros >= to_micros(proposal.expires_at):
        return []  # past the deadline nothing is due: the proposal expires instead
    steps = [
        Followup(f"{REMIND}:{n}", int(after))
        for n, after in enumerate(escalation.get("remind_after") or (), start=1)
    ]
    if "escalate_after" in escalation and REASSIGNED not in done:
        # An admin's reassignment is the last word on who decides: no escalation after it.
        steps.append(
            Followup(
                ESCALATE,
                int(escalation["escalate_after"]),
                tuple(str(t) for t in escalation.get("targets") or ()),
            )
        )
    created = to_micros(proposal.created_at)
    return [
        s
        for s in steps
        if s.step not in done and created + s.after_seconds * 1_000_000 <= now_micros
    ]


def run_followups(ctx: GateContext, *, limit: int = 100) -> FollowupPass:
    """One pass: expire what is past its deadline, then take every due reminder and escalation.

    Every pending proposal with an escalation is looked at, a page of ``limit`` at a time, in
    reads; a write transaction opens only for one that has a step due.
    """
    from signoff.gate._lifecycle import expire_due

    done = FollowupPass(expired=expire_due(ctx))
    after: tuple[int, str] | None = None
    while True:
        now = ctx.now_micros()
        with ctx.store.read() as tx:
            page = tx.pending_with_followups(now, limit, after)
            due = [(t, p) for t, p, _ in page if _has_due(tx, t, p, now)]
        for tenant, proposal_id in due:
            for step in ctx.write(partial(_take_due, ctx, tenant=tenant, proposal_id=proposal_id)):
                (done.escalated if step == ESCALATE else done.reminded).append(proposal_id)
        if len(page) < limit:
            return done
        after = (page[-1][2], page[-1][1])


def _has_due(tx: SqlTransaction, tenant: str, proposal_id: str, now: int) -> bool:
    proposal = tx.proposal(tenant, proposal_id)
    return proposal is not None and bool(due_followups(proposal, now, tx.followups(proposal_id)))


def _take_due(ctx: GateContext, tx: SqlTransaction, *, tenant: str, proposal_id: str) -> list[str]:
    proposal = tx.proposal(tenant, proposal_id)
    if proposal is None:
        return []
    now = ctx.now_micros()
    won: list[str] = []
    for followup in due_followups(proposal, now, tx.followups(proposal_id)):
        if not tx.claim_followup(tenant, proposal_id, followup.step, now):
            continue  # another worker took it first: its event is the one
        data: dict[str, Any] = {"step": followup.step, "after_seconds": followup.after_seconds}
        if followup.step == ESCALATE:
            tx.add_assignees(tenant, proposal_id, followup.targets, via="escalation", now=now)
            data["targets"] = list(followup.targets)
            kind = "proposal.escalated"
        else:
            kind = "proposal.reminded"
        data["expires_at"] = to_micros(proposal.expires_at)  # unchanged, for the record
        tx.append_audit(tenant=tenant, at=now, kind=kind, proposal_id=proposal_id, data=data)
        won.append(followup.step)
    if won:
        log.info("proposal %s: %s", proposal_id, ", ".join(won))
    return won


def check_targets(targets: Sequence[object]) -> tuple[str, ...]:
    """``role:NAME`` / ``person:SUBJECT`` entries, each once; a typed refusal otherwise."""
    if not isinstance(targets, list | tuple) or not 1 <= len(targets) <= MAX_TARGETS:
        raise InvalidRequest(f"to is a list of 1 to {MAX_TARGETS} targets")
    found: list[str] = []
    for target in targets:
        kind, _, name = str(target).partition(":")
        valid = (kind == "role" and ROLE.match(name)) or (
            kind == "person" and 0 < len(name) <= 255 and name.isprintable()
        )
        if not isinstance(target, str) or not valid:
            raise InvalidRequest(
                f"target {str(target)[:80]!r} is not role:<role> or person:<subject>"
            )
        if target not in found:
            found.append(target)
    return tuple(sorted(found))


def reassign(
    ctx: GateContext,
    principal: Principal,
    proposal_id: str,
    *,
    to: Sequence[object],
    reason: str,
) -> Proposal:
    """An admin hands a pending proposal to other people: only ``to`` may decide it now.

    The proposal's version moves, so a decision read before the reassignment is refused
    as stale and read again (and then refused, if its author is no longer eligible).
    """
    targets = check_targets(to)
    if not reason or len(reason) > MAX_REASON:
        raise InvalidRequest(f"a reason of 1 to {MAX_REASON} characters is required")

    def step(tx: SqlTransaction) -> Proposal:
        directory = ctx.directory_in(tx)
        proposal = load_visible(tx, principal, proposal_id, directory)
        if principal.is_agent or not holds_role(principal, ADMIN_ROLE, directory):
            raise Forbidden(f"reassigning needs a person with {ADMIN_ROLE!r}")
        if f"person:{proposal.requester_subject}" in targets:
            raise InvalidRequest("the requester can never decide their own request")
        now = ctx.now_micros()
        if proposal.status is not ProposalStatus.AWAITING_CONFIRMATION or now >= to_micros(
            proposal.expires_at
        ):
            raise InvalidState(
                "only a proposal awaiting confirmation can be reassigned; this one is "
                + (
                    "past its deadline"
                    if proposal.status.value == "awaiting_confirmation"
                    else proposal.status.value
                ),
                proposal_id=proposal_id,
                status=proposal.status.value,
            )
        if not tx.bump_proposal_version(proposal_id, proposal.version, now):
            raise InvalidState(
                "the proposal changed meanwhile; read it again", proposal_id=proposal_id
            )
        tx.clear_assignees(proposal_id)
        tx.claim_followup(proposal.tenant, proposal_id, REASSIGNED, now)
        tx.add_assignees(proposal.tenant, proposal_id, targets, via="reassignment", now=now)
        tx.append_audit(
            tenant=proposal.tenant,
            at=now,
            kind="proposal.reassigned",
            proposal_id=proposal_id,
            actor=principal.subject,
            data={"targets": list(targets), "reason": reason},
        )
        return load_visible(tx, principal, proposal_id, None)

    return ctx.write(step)
