"""A mandate as it is read and shown: its state (what is left), the proposal view the
decision checks read, its preview, and who may see it (the circle, rule 12)."""

from __future__ import annotations

from dataclasses import dataclass

from signoff._clock import from_micros
from signoff._directory import RoleDirectory
from signoff._model import Principal, Proposal, ProposalStatus
from signoff.catalog._types import Preview, PreviewField, Risk, RiskLevel
from signoff.exceptions import NotFound
from signoff.gate._circle import may_see
from signoff.policy import Constraints
from signoff.store._sql import MandateRecord, MandateWriteRecord, SqlTransaction

AWAITING = "awaiting_confirmation"
ACTIVE = "active"
DECLINED = "declined"
REVOKED = "revoked"
EXPIRED = "expired"
MAX_REASON = 2000
_VIEW_STATUS = {
    AWAITING: ProposalStatus.AWAITING_CONFIRMATION,
    ACTIVE: ProposalStatus.CONFIRMED,
    DECLINED: ProposalStatus.DECLINED,
    REVOKED: ProposalStatus.REVOKED,
    EXPIRED: ProposalStatus.EXPIRED,
}


@dataclass(frozen=True, slots=True)
class MandateState:
    """A mandate as its circle may read it: the record, what is left, its writes."""

    record: MandateRecord
    remaining_amount_minor: int | None
    remaining_count: int | None
    writes: tuple[MandateWriteRecord, ...] = ()
    duplicate: bool = False

    @property
    def status(self) -> str:
        return self.record.status


def state_of(record: MandateRecord, writes: tuple[MandateWriteRecord, ...] = ()) -> MandateState:
    amount, count = Constraints.from_dict(record.constraints).remaining(
        record.spent_minor, record.used
    )
    return MandateState(record, amount, count, writes)


def as_proposal(m: MandateRecord) -> Proposal:
    """The mandate as the decision checks read a proposal: its id, digest, policy, approvals."""
    return Proposal(
        proposal_id=m.mandate_id,
        action_id=m.mandate_id,
        tenant=m.tenant,
        requester_subject=m.requester_subject,
        requester_actor=m.requester_actor,
        tool=m.tool,
        tool_version=m.tool_version,
        arguments=dict(m.constraints),
        args_digest=m.digest,
        resource_id=f"mandate:{m.tool}",
        state_version=str(m.version),
        state={"summary": {}, "beneficiary": None},
        risk=Risk(RiskLevel.HIGH, ("a standing approval covers several writes",)),
        policy=m.policy,
        preview=mandate_preview(m),
        rationale=None,
        request_key="",
        status=_VIEW_STATUS.get(m.status, ProposalStatus.REVOKED),
        version=m.version,
        created_at=from_micros(m.created_at),
        expires_at=from_micros(m.expires_at),
        approvals=m.approvals,
    )


def mandate_preview(m: MandateRecord) -> Preview:
    """What the approver reads: every constraint, the tool and the window."""
    c = m.constraints
    currency = c.get("currency")
    money = (lambda v: f"{v} {currency} minor units") if currency else str
    fields = [PreviewField("tool", "Tool", m.tool)]
    labels = {
        "currency": ("Currency", str),
        "max_amount_minor": ("Most per write", money),
        "total_amount_minor": ("Budget, in total", money),
        "max_count": ("Writes, at most", str),
        "resources": ("Only these resources", lambda v: ", ".join(v)),
        "agents": ("Only these agents", lambda v: ", ".join(v)),
    }
    for name, (label, show) in labels.items():
        if name in c:
            fields.append(PreviewField(name, label, c[name], show(c[name])))
    agents = ", ".join(c["agents"]) if "agents" in c else f"any agent of {m.requester_subject}"
    return Preview(
        title=f"Standing approval for {m.tool}",
        description=(
            f"{agents} may run {m.tool} without asking again, within these limits, until "
            f"{from_micros(m.expires_at).isoformat()}."
        ),
        fields=tuple(fields),
        impact="Each write under it is confirmed without a person and debits what is left.",
        reversibility="Revocable at any time; writes already started are not undone.",
    )


def load_visible_mandate(
    tx: SqlTransaction, principal: Principal, mandate_id: str, directory: RoleDirectory | None
) -> MandateRecord:
    """The mandate if the caller is in its circle (rule 12); otherwise 404."""
    record = tx.mandate(principal.tenant, mandate_id)
    if record is None or not may_see(as_proposal(record), principal, directory):
        raise NotFound("no such mandate", mandate_id=mandate_id)
    return record
