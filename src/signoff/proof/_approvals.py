"""Per-proposal checks: requested = approved = executed digest, by the right people.

Given one proposal's events (in chain order) this checks what the log itself
claims: every approval names the proposal's digest; every execution event
carries that digest; execution happened only after the policy's approvals
were complete, each by a distinct person at the step the policy names
(recorded at decision time). Each approval is then classified by what vouches
for it (:func:`vouched_by`) and the policy the proposal recorded is enforced
on that: ``evidence: idp`` needs the identity provider's token, a ``device``
rule the person's passkey, over an enrolment earlier in the log.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.proof._device import DeviceCheckFailed, verify_device_assertion
from signoff.proof._events import payload_of
from signoff.proof._idp import EvidenceRejected, IdentityProvider, verify_idp_evidence
from signoff.proof._keys import b64url_decode
from signoff.proof._report import Finding, Report

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
class Enrolment:
    """A ``passkey.registered`` event: the key, where it is in the log, who vouched for it."""

    public_key: Any
    seq: int
    evidence: Any = None
    """The enrolment's evidence (issue 22: an identity-provider sign-in bound to the credential,
    attestation); absent: nobody but signoff vouches that the credential is the person's."""


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
    passkeys: Mapping[tuple[str, str], Enrolment],
    providers: Sequence[IdentityProvider] = (),
) -> None:
    """Check every proposal whose ``proposal.created`` event is among ``events``."""
    proposals: dict[str, _Proposal] = {}
    for event in events:
        pid = event.proposal_id
        data = payload_of(event)
        if event.kind == "proposal.created" and pid is not None:
            policy = dict(data.get("policy") or {})
            tool = data.get("tool")
            proposals[pid] = _Proposal(pid, policy, data.get("args_digest"), event.tenant, tool)
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
    for proposal in proposals.values():
        _check_one(proposal, report, passkeys, providers)


def _check_one(
    p: _Proposal,
    report: Report,
    passkeys: Mapping[tuple[str, str], Enrolment],
    providers: Sequence[IdentityProvider],
) -> None:
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
        voucher = vouched_by(event, p.approved, passkeys, providers)
        for finding in voucher.failures:
            report.fail(finding.code, f"{where}: #{event.seq}: {finding.message}")
        if voucher.by in DEVICE_KINDS:
            report.device_signatures += 1
        _check_policy(p, event, voucher, report, where, passkeys)
        report.approvals.append(_entry(event, voucher))


def vouched_by(
    event: AuditEvent,
    approved: Approved,
    passkeys: Mapping[tuple[str, str], Enrolment],
    providers: Sequence[IdentityProvider] = (),
) -> Voucher:
    """The strongest evidence that verifies for ``event``: idp > device/spc > signoff alone.

    Evidence that is recorded but does not verify is named in ``failures`` and does not
    count: the approval is then vouched for by whatever else holds, at worst signoff.
    """
    data = payload_of(event)
    failures: list[Finding] = []
    device_kind, vouched = None, None
    if data.get("device") is not None:
        device_kind, vouched, failure = _device(event, approved, data["device"], passkeys)
        failures += [failure] if failure is not None else []
    if data.get("idp") is not None:
        try:
            claims = verify_idp_evidence(
                data["idp"],
                providers,
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
    passkeys: Mapping[tuple[str, str], Enrolment],
) -> tuple[str | None, bool | None, Finding | None]:
    """(device or spc, whether its enrolment is vouched, why it does not count)."""
    try:
        verify_device_assertion(
            device,
            proposal_id=approved.proposal_id,
            version=int(device.get("version", 0)),
            args_digest=approved.args_digest,
            decision="approve",
        )
        kind = SPC if _client_type(device) == SPC_TYPE else DEVICE
    except (DeviceCheckFailed, AttributeError, TypeError, ValueError) as exc:
        return None, None, Finding("device_signature_invalid", str(exc))
    enrolled = passkeys.get((str(event.actor), str(device.get("credential_id"))))
    if enrolled is None or enrolled.seq > event.seq:
        return (
            None,
            None,
            Finding(
                "device_enrolment_missing",
                f"{event.actor!r} enrolled credential {device.get('credential_id')} nowhere before"
                " this approval in these events (a bundle: export from before the enrolment)",
            ),
        )
    if enrolled.public_key != device.get("public_key"):
        return None, None, Finding("device_key_unknown", "signed with a key never enrolled")
    return kind, enrolment_vouched(enrolled), None


def enrolment_vouched(enrolment: Enrolment) -> bool:
    """Whether someone other than signoff vouched that the enrolled credential is the person's.

    Missing evidence is not vouched. The evidence's own check (an identity-provider sign-in
    bound to the credential id, attestation) belongs here, with issue 22's vouched
    enrolment; until it lands, recorded evidence is not checked, so it does not count.
    """
    if enrolment.evidence is None:
        return False
    return False


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
    passkeys: Mapping[tuple[str, str], Enrolment],
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
    elif rule == DEVICE_OR_RETYPE and _enrolled_before(passkeys, str(event.actor), event.seq):
        report.fail(
            "device_required",
            f"{at}: re-typed, but they had enrolled a passkey, which the policy then requires",
        )


def _enrolled_before(passkeys: Mapping[tuple[str, str], Enrolment], who: str, seq: int) -> bool:
    return any(person == who and e.seq < seq for (person, _), e in passkeys.items())


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


def passkeys_in(events: Sequence[AuditEvent]) -> dict[tuple[str, str], Enrolment]:
    """(person, credential id) → the last enrolment of that credential in ``passkey.registered``."""
    found: dict[tuple[str, str], Enrolment] = {}
    for event in events:
        if event.kind == "passkey.registered" and event.actor is not None:
            data = payload_of(event)
            found[(event.actor, str(data.get("credential_id")))] = Enrolment(
                data.get("public_key"), event.seq, data.get("evidence")
            )
    return found
