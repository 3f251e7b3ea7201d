"""Per-proposal checks: requested = approved = executed digest, by the right people.

Given one proposal's events (in chain order) this checks what the log itself
claims: every approval names the proposal's digest; every execution event
carries that digest; execution happened only after the policy's approvals
were complete, each by a distinct person at the step the policy names
(recorded at decision time). Each approval is then classified by what vouches
for it (:func:`vouched_by`) and the policy the proposal recorded is enforced
on that: ``evidence: idp`` needs the identity provider's token, a ``device``
rule the person's passkey, enrolled earlier in the log with an enrolment a
trusted identity provider vouched for (``_enrolment``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.proof._device import DeviceCheckFailed, verify_device_assertion
from signoff.proof._enrolment import enrolment_refusal
from signoff.proof._events import payload_of
from signoff.proof._idp import EvidenceRejected, verify_idp_evidence
from signoff.proof._keys import b64url_decode
from signoff.proof._report import Finding, Report
from signoff.proof._trust import TrustRoot

REQUESTER_STEP = "requester"
DEVICE_REQUIRED = "required"
DEVICE_OR_RETYPE = "or_retype"
EXECUTED_KINDS = ("token.consumed", "execution.")
MICROS = 1_000_000
SIGNOFF, DEVICE, SPC, IDP = "signoff", "device", "spc", "idp"
"""What vouches for an approval: signoff's signature only (re-typed, clicked), the person's
passkey over this decision (WebAuthn; SPC when the browser showed the amount), or the
identity provider's token naming this proposal."""
DEVICE_KINDS = (DEVICE, SPC)
UNCHECKED = "unchecked"
"""An approval of a proposal whose ``proposal.created`` is not among the events."""
SPC_TYPE = "payment.get"


@dataclass(frozen=True, slots=True)
class Approved:
    """What an approval must name: the proposal as its ``proposal.created`` event froze it."""

    proposal_id: str
    tenant: str
    tool: str | None
    args_digest: str


@dataclass(frozen=True, slots=True)
class Voucher:
    """What vouches for one approval, after its evidence was checked, and what failed."""

    by: str
    enrolment_vouched: bool | None = None
    issuer: str | None = None
    failures: tuple[Finding, ...] = ()


@dataclass(slots=True)
class _Proposal:
    pid: str
    policy: dict[str, Any]
    digest: str | None
    tenant: str
    tool: str | None
    preview_digest: str | None = None
    approvals: list[AuditEvent] = field(default_factory=list)
    executed: list[AuditEvent] = field(default_factory=list)
    requester: str | None = None
    mandate: str | None = None
    """Confirmed under a mandate: its approvals are the mandate's (``_mandates`` checks)."""

    @property
    def approved(self) -> Approved:
        return Approved(self.pid, self.tenant, self.tool, str(self.digest))


def check_proposals(
    events: Sequence[AuditEvent],
    report: Report,
    *,
    trust: TrustRoot,
) -> None:
    """Check every proposal whose ``proposal.created`` event is among ``events``."""
    proposals: dict[str, _Proposal] = {}
    for event in events:
        pid = event.proposal_id
        data = payload_of(event)
        if event.kind == "proposal.created" and pid is not None:
            policy = dict(data.get("policy") or {})
            tool, shown = data.get("tool"), data.get("preview_digest")
            proposals[pid] = _Proposal(
                pid, policy, data.get("args_digest"), event.tenant, tool, shown
            )
            continue
        proposal = proposals.get(pid or "")
        if proposal is None:
            if event.kind == "decision.approved":
                report.approvals.append(_entry(event, Voucher(UNCHECKED)))
            continue
        if event.kind == "decision.approved":
            proposal.approvals.append(event)
        elif event.kind == "token.issued":
            proposal.requester = data.get("subject")
        elif event.kind == "mandate.debited":
            proposal.mandate = str(data.get("mandate_id"))
        elif event.kind.startswith(EXECUTED_KINDS) and event.kind != "execution.started":
            proposal.executed.append(event)
    enrolments = Enrolments.of(events, trust)
    for proposal in proposals.values():
        _check_one(proposal, report, enrolments)


def _check_one(p: _Proposal, report: Report, enrolments: Enrolments) -> None:
    where = f"proposal {p.pid}"
    for event in p.approvals:
        if payload_of(event).get("args_digest") != p.digest:
            report.fail("approval_digest_mismatch", f"{where}: #{event.seq} approved another")
    for event in p.executed:
        data = payload_of(event)
        digest = data.get("executed_digest", data.get("args_digest"))
        if digest is not None and digest != p.digest:
            report.fail(
                "executed_digest_mismatch",
                f"{where}: #{event.seq} ({event.kind}) ran digest {digest}, approved {p.digest}",
            )
    people = _check_people(p, report, where)
    if p.executed and p.mandate is None and not _complete(p, people):
        report.fail("executed_without_approval", f"{where}: executed before its policy was met")
    if p.executed:
        report.executions += 1
    for event in p.approvals:
        voucher = vouched_by(event, p.approved, enrolments, p.preview_digest)
        for finding in voucher.failures:
            report.fail(finding.code, f"{where}: #{event.seq}: {finding.message}")
        if voucher.by in DEVICE_KINDS and voucher.enrolment_vouched:
            report.device_signatures += 1
        _check_policy(p, event, voucher, report, where, enrolments)
        report.approvals.append(_entry(event, voucher))


def vouched_by(
    event: AuditEvent,
    approved: Approved,
    enrolments: Enrolments,
    preview_digest: str | None = None,
) -> Voucher:
    """The strongest evidence that verifies for ``event``: idp > device/spc > signoff alone.

    Evidence that is recorded but does not verify is named in ``failures`` and does not
    count: the approval is then vouched for by whatever else holds, at worst signoff. A
    device (or SPC) assertion that verifies, from a passkey whose enrolment no trusted
    identity provider vouched for, is ``device`` with ``enrolment_vouched`` False — and
    fails (``device_enrolment_unvouched``): whoever enrolled that key could have signed.
    """
    data = payload_of(event)
    failures: list[Finding] = []
    device_kind, vouched = None, None
    if data.get("device") is not None:
        device_kind, vouched, failure = _device(
            event, approved, data["device"], enrolments, preview_digest
        )
        failures += [failure] if failure is not None else []
    if data.get("idp") is not None:
        try:
            claims = verify_idp_evidence(
                data["idp"],
                enrolments.trust.providers(),
                subject=str(event.actor),
                proposal={"proposal_id": approved.proposal_id, "tenant": approved.tenant,
                          "tool": approved.tool, "args_digest": approved.args_digest},
                decided_at=event.at // MICROS,
            )  # fmt: skip
            return Voucher(IDP, vouched, str(claims.get("iss")), tuple(failures))
        except EvidenceRejected as exc:
            failures.append(Finding(exc.code, exc.message))
    if device_kind is not None:
        return Voucher(device_kind, vouched, None, tuple(failures))
    return Voucher(SIGNOFF, None, None, tuple(failures))


def _device(
    event: AuditEvent,
    approved: Approved,
    device: Any,
    enrolments: Enrolments,
    preview_digest: str | None,
) -> tuple[str | None, bool | None, Finding | None]:
    """(device or spc, whether its enrolment is vouched, why it does not count)."""
    try:
        verify_device_assertion(
            device,
            proposal_id=approved.proposal_id,
            version=int(device.get("version", 0)),
            args_digest=approved.args_digest,
            decision="approve",
            subject=str(event.actor),
            tenant=event.tenant,
            preview_digest=preview_digest,
        )
        kind = SPC if _client_type(device) == SPC_TYPE else DEVICE
    except (DeviceCheckFailed, AttributeError, TypeError, ValueError) as exc:
        return None, None, Finding("device_signature_invalid", str(exc))
    finding = enrolments.finding(event, device)
    if finding is None:
        return kind, True, None
    if finding.code == "device_enrolment_unvouched":
        return kind, False, finding
    return None, None, finding


def _client_type(device: Mapping[str, Any]) -> Any:
    return json.loads(b64url_decode(str(device["client_data_json"]))).get("type")


def _check_people(p: _Proposal, report: Report, where: str) -> dict[str, set[str]]:
    """Approvers per step; flags a repeated person and a step the policy does not name."""
    seen: set[str] = set()
    steps: dict[str, set[str]] = {}
    role = p.policy.get("role")
    for event in p.approvals:
        person, step = event.actor, payload_of(event).get("step")
        if person is None or person in seen:
            report.fail("duplicate_approver", f"{where}: #{event.seq} by {person!r} again")
            continue
        seen.add(person)
        if step == REQUESTER_STEP and p.policy.get("requester_confirms"):
            if p.requester is not None and person != p.requester:
                report.fail("separation_of_duties", f"{where}: {person!r} confirmed as requester")
        elif role is None or step != f"role:{role}":
            report.fail("approval_role_mismatch", f"{where}: {person!r} approved as {step!r}")
            continue
        elif person == p.requester:
            report.fail("separation_of_duties", f"{where}: the requester approved as role holder")
        steps.setdefault(str(step), set()).add(person)
    return steps


def _complete(p: _Proposal, people: dict[str, set[str]]) -> bool:
    if p.policy.get("requester_confirms") and not people.get(REQUESTER_STEP):
        return False
    role = p.policy.get("role")
    needed = int(p.policy.get("approvals") or 1)
    return role is None or len(people.get(f"role:{role}", ())) >= needed


def _check_policy(
    p: _Proposal,
    event: AuditEvent,
    voucher: Voucher,
    report: Report,
    where: str,
    enrolments: Enrolments,
) -> None:
    """The proposal's recorded evidence and device rules, against what vouches for ``event``."""
    data = payload_of(event)
    at = f"{where}: #{event.seq} by {event.actor!r}"
    if p.policy.get("evidence") == IDP and voucher.by != IDP and data.get("idp") is None:
        report.fail("evidence_missing", f"{at}: the policy needs the identity provider's token")
    if data.get("device") is not None:
        return  # an assertion was recorded: vouched_by verified it (or reported why not)
    rule = p.policy.get("device")
    if rule == DEVICE_REQUIRED:
        report.fail("device_signature_missing", f"{at} has no device signature")
    elif p.policy.get("evidence") == "device" and voucher.by != IDP:
        report.fail("device_required", f"{at}: the policy needs the person's device signature")
    elif rule == DEVICE_OR_RETYPE and enrolments.enrolled_before(str(event.actor), event.seq):
        report.fail(
            "device_required",
            f"{at}: re-typed, but they had enrolled a passkey, which the policy then requires",
        )


def _entry(event: AuditEvent, voucher: Voucher) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "proposal_id": event.proposal_id,
        "seq": event.seq,
        "subject": event.actor,
        "role": payload_of(event).get("step"),
        "decided_at": event.at,
        "vouched_by": voucher.by,
    }
    if voucher.by in DEVICE_KINDS:
        entry["enrolment_vouched"] = bool(voucher.enrolment_vouched)
    if voucher.issuer is not None:
        entry["issuer"] = voucher.issuer
    return entry


@dataclass(frozen=True, slots=True)
class Enrolments:
    """The ``passkey.registered`` events among the events, and the trust that judges them."""

    events: Mapping[tuple[str, str], AuditEvent]
    trust: TrustRoot

    @classmethod
    def of(cls, events: Sequence[AuditEvent], trust: TrustRoot) -> Enrolments:
        return cls(enrolments_in(events), trust)

    def finding(self, event: AuditEvent, device: Mapping[str, Any]) -> Finding | None:
        """Why ``event``'s verified assertion does not count for its passkey's enrolment: none
        before it among these events (``device_enrolment_missing``), another key
        (``device_key_unknown``), or an enrolment no trusted identity provider vouched for
        (``device_enrolment_unvouched``); None when it counts."""
        registered = self.events.get((str(event.actor), str(device.get("credential_id"))))
        if registered is None or registered.seq > event.seq:
            return Finding(
                "device_enrolment_missing",
                f"{event.actor!r} enrolled credential {device.get('credential_id')} nowhere"
                " before this approval in these events (a bundle: export from before the"
                " enrolment)",
            )
        if payload_of(registered).get("public_key") != device.get("public_key"):
            return Finding("device_key_unknown", "signed with a key never enrolled")
        refusal = enrolment_refusal(registered, self.trust)
        return None if refusal is None else Finding("device_enrolment_unvouched", refusal)

    def enrolled_before(self, who: str, seq: int) -> bool:
        return any(person == who and e.seq < seq for (person, _), e in self.events.items())


def enrolments_in(events: Sequence[AuditEvent]) -> dict[tuple[str, str], AuditEvent]:
    """(person, credential id) → the last ``passkey.registered`` event that enrolled it."""
    return {
        (event.actor, str(payload_of(event).get("credential_id"))): event
        for event in events
        if event.kind == "passkey.registered" and event.actor is not None
    }
