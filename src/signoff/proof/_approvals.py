"""Per-proposal checks: requested = approved = executed digest, by the right people.

Given one proposal's events (in chain order) this checks what the log itself
claims: every approval names the proposal's digest; every execution event
carries that digest; execution happened only after the policy's approvals
were complete, each by a distinct person at the step the policy names
(recorded at decision time); and where the policy asks for a device
signature, each approval carries one that verifies offline, from a passkey
that person enrolled earlier in the log, with an enrolment a trusted identity
provider vouched for (``_enrolment``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.proof._device import DeviceCheckFailed, verify_device_assertion
from signoff.proof._enrolment import enrolment_refusal
from signoff.proof._events import payload_of
from signoff.proof._report import Report
from signoff.proof._trust import TrustRoot

REQUESTER_STEP = "requester"
DEVICE_REQUIRED = "required"
EXECUTED_KINDS = ("token.consumed", "execution.")


@dataclass(slots=True)
class _Proposal:
    pid: str
    policy: dict[str, Any]
    digest: str | None
    preview_digest: str | None = None
    approvals: list[AuditEvent] = field(default_factory=list)
    executed: list[AuditEvent] = field(default_factory=list)
    requester: str | None = None
    mandate: str | None = None
    """Confirmed under a mandate: its approvals are the mandate's (``_mandates`` checks)."""


def check_proposals(
    events: Sequence[AuditEvent],
    report: Report,
    *,
    passkeys: Mapping[tuple[str, str], Any],
    trust: TrustRoot,
) -> None:
    """Check every proposal whose ``proposal.created`` event is among ``events``."""
    proposals: dict[str, _Proposal] = {}
    for event in events:
        pid = event.proposal_id
        data = payload_of(event)
        if event.kind == "proposal.created" and pid is not None:
            policy = dict(data.get("policy") or {})
            shown = data.get("preview_digest")
            proposals[pid] = _Proposal(pid, policy, data.get("args_digest"), shown)
            continue
        proposal = proposals.get(pid or "")
        if proposal is None:
            continue
        if event.kind == "decision.approved":
            proposal.approvals.append(event)
        elif event.kind == "token.issued":
            proposal.requester = data.get("subject")
        elif event.kind == "mandate.debited":
            proposal.mandate = str(data.get("mandate_id"))
        elif event.kind.startswith(EXECUTED_KINDS) and event.kind != "execution.started":
            proposal.executed.append(event)
    enrolments = Enrolments(passkeys, enrolments_in(events), trust)
    for proposal in proposals.values():
        _check_one(proposal, report, enrolments)


def _check_one(p: _Proposal, report: Report, passkeys: Enrolments) -> None:
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
    _check_devices(p, report, where, passkeys)


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


def _check_devices(p: _Proposal, report: Report, where: str, passkeys: Enrolments) -> None:
    required = p.policy.get("device") == DEVICE_REQUIRED
    for event in p.approvals:
        device = payload_of(event).get("device")
        if device is None:
            if required:
                report.fail("device_signature_missing", f"{where}: #{event.seq} has no device")
            continue
        try:
            verify_device_assertion(
                device,
                proposal_id=p.pid,
                version=int(device.get("version", 0)),
                args_digest=str(p.digest),
                decision="approve",
                subject=str(event.actor),
                tenant=event.tenant,
                preview_digest=p.preview_digest,
            )
        except (DeviceCheckFailed, AttributeError, TypeError, ValueError) as exc:
            report.fail("device_signature_invalid", f"{where}: #{event.seq}: {exc}")
            continue
        pair = (str(event.actor), str(device.get("credential_id")))
        enrolled = passkeys.keys.get(pair)
        if enrolled is not None and enrolled != device.get("public_key"):
            report.fail("device_key_unknown", f"{where}: #{event.seq} used a key never enrolled")
            continue
        refusal = passkeys.refusal(pair)
        if refusal is not None:
            report.fail("device_enrolment_unvouched", f"{where}: #{event.seq}: {refusal}")
            continue
        report.device_signatures += 1


@dataclass(frozen=True, slots=True)
class Enrolments:
    """The enrolled keys, their ``passkey.registered`` events, and the trust that judges them."""

    keys: Mapping[tuple[str, str], Any]
    events: Mapping[tuple[str, str], AuditEvent]
    trust: TrustRoot

    def refusal(self, pair: tuple[str, str]) -> str | None:
        """Why the passkey (person, credential id) is not vouched for; None when it is."""
        registered = self.events.get(pair)
        if registered is None:
            return "the passkey's enrolment is not in this range"
        return enrolment_refusal(registered, self.trust)


def enrolments_in(events: Sequence[AuditEvent]) -> dict[tuple[str, str], AuditEvent]:
    """(person, credential id) → the ``passkey.registered`` event that enrolled it."""
    return {
        (event.actor, str(payload_of(event).get("credential_id"))): event
        for event in events
        if event.kind == "passkey.registered" and event.actor is not None
    }


def passkeys_in(events: Sequence[AuditEvent]) -> dict[tuple[str, str], Any]:
    """(person, credential id) → the public key enrolled in ``passkey.registered`` events."""
    found: dict[tuple[str, str], Any] = {}
    for event in events:
        if event.kind == "passkey.registered" and event.actor is not None:
            data = payload_of(event)
            found[(event.actor, str(data.get("credential_id")))] = data.get("public_key")
    return found
