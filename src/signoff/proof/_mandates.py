"""Offline: every write under a mandate respects the mandate (PROTOCOL rule 18).

From one tenant's events alone: the mandate was created with these
constraints and digest, its approvals were complete (distinct people at the
step its policy names, a device signature over the mandate where its policy
requires one, from a passkey whose enrolment an identity provider vouched
for) before its first write, and each write (``mandate.debited``) came
before the mandate ended and expired, for its tool, in its currency, within
the per-write maximum, on an allowed resource, by an allowed agent — and the
sum of the amounts that may have happened never exceeded the budget, nor the
count the maximum, at any point of the log. A write's amount is given back
only where the log shows it did not happen (``execution.failed_terminal``, a
revoked or expired confirmation), as the store does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.proof._approvals import Enrolments
from signoff.proof._device import DeviceCheckFailed, verify_device_assertion
from signoff.proof._events import payload_of
from signoff.proof._report import Report
from signoff.proof._trust import TrustRoot

GIVE_BACK_KINDS = (
    "execution.failed_terminal",
    "proposal.revoked",
    "proposal.expired",
    "proposal.cancelled",
)


@dataclass(slots=True)
class _Mandate:
    mandate_id: str
    data: dict[str, Any]
    approvers: dict[str, str] = field(default_factory=dict)
    """approver → step, for complete approvals in log order."""
    active_at: int | None = None
    ended_at: int | None = None
    held: int = 0
    count: int = 0


def check_mandates(events: Sequence[AuditEvent], report: Report, *, trust: TrustRoot) -> None:
    """Add a finding for every write that a mandate in ``events`` did not allow."""
    enrolments = Enrolments.of(events, trust)
    mandates: dict[str, _Mandate] = {}
    tools: dict[str, tuple[str | None, str | None]] = {}
    held: dict[str, tuple[_Mandate, int]] = {}
    for event in events:
        data = payload_of(event)
        kind = event.kind
        if kind == "mandate.created":
            mid = str(data.get("mandate_id"))
            mandates[mid] = _Mandate(mid, data)
        elif kind in ("mandate.approved", "mandate.rejected"):
            found = mandates.get(str(data.get("mandate_id")))
            _decision(found, event, data, report, enrolments)
        elif kind in ("mandate.revoked", "mandate.ended", "mandate.expired"):
            found = mandates.get(str(data.get("mandate_id")))
            if found is not None and found.ended_at is None:
                found.ended_at = event.seq
        elif kind == "proposal.created" and event.proposal_id is not None:
            tools[event.proposal_id] = (data.get("tool"), data.get("args_digest"))
        elif kind == "mandate.debited":
            _debit(mandates, tools, held, event, data, report)
        elif kind in GIVE_BACK_KINDS and event.proposal_id in held:
            mandate, amount = held.pop(event.proposal_id)
            mandate.held -= amount
            mandate.count -= 1


def _decision(
    m: _Mandate | None,
    event: AuditEvent,
    data: dict[str, Any],
    report: Report,
    enrolments: Enrolments,
) -> None:
    if m is None:
        return
    where = f"mandate {m.mandate_id}"
    if data.get("digest") != m.data.get("digest"):
        report.fail("approval_digest_mismatch", f"{where}: #{event.seq} decided another digest")
        return
    if event.kind != "mandate.approved":
        m.ended_at = m.ended_at or event.seq
        return
    person = str(event.actor)
    if person in m.approvers:
        report.fail("duplicate_approver", f"{where}: #{event.seq} by {person!r} again")
        return
    policy = m.data.get("policy") or {}
    step = str(data.get("step"))
    if step == "requester":
        requester = (m.data.get("requester") or {}).get("subject")
        if not policy.get("requester_confirms") or person != requester:
            report.fail("separation_of_duties", f"{where}: {person!r} confirmed as requester")
            return
    elif step != f"role:{policy.get('role')}":
        report.fail("approval_role_mismatch", f"{where}: {person!r} approved as {step!r}")
        return
    if not _device_ok(m, event, data, policy, report, enrolments):
        return
    m.approvers[person] = step
    entry = {"proposal_id": m.mandate_id, "seq": event.seq, "subject": person, "role": step,
             "decided_at": event.at, "vouched_by": "signoff"}  # fmt: skip
    if data.get("device") is not None:  # _device_ok: it verified, from a vouched enrolment
        entry |= {"vouched_by": "device", "enrolment_vouched": True}
    report.approvals.append(entry)
    if m.active_at is None and _complete(m, policy):
        m.active_at = event.seq


def _device_ok(
    m: _Mandate,
    event: AuditEvent,
    data: dict[str, Any],
    policy: dict[str, Any],
    report: Report,
    enrolments: Enrolments,
) -> bool:
    device = data.get("device")
    where = f"mandate {m.mandate_id}: #{event.seq}"
    if device is None:
        if policy.get("device") == "required":
            report.fail("device_signature_missing", f"{where} has no device signature")
            return False
        return True
    try:
        verify_device_assertion(
            device,
            proposal_id=m.mandate_id,
            version=int(device.get("version", 0)),
            args_digest=str(m.data.get("digest")),
            decision="approve",
            subject=str(event.actor),
            tenant=event.tenant,
        )
    except (DeviceCheckFailed, AttributeError, TypeError, ValueError) as exc:
        report.fail("device_signature_invalid", f"{where}: {exc}")
        return False
    finding = enrolments.finding(event, device)
    if finding is not None:
        report.fail(finding.code, f"{where}: {finding.message}")
        return False
    report.device_signatures += 1
    return True


def _complete(m: _Mandate, policy: dict[str, Any]) -> bool:
    steps = list(m.approvers.values())
    if policy.get("requester_confirms") and "requester" not in steps:
        return False
    role = policy.get("role")
    if role is None:
        return True
    return steps.count(f"role:{role}") >= int(policy.get("approvals") or 1)


def _debit(
    mandates: dict[str, _Mandate],
    tools: dict[str, tuple[str | None, str | None]],
    held: dict[str, tuple[_Mandate, int]],
    event: AuditEvent,
    data: dict[str, Any],
    report: Report,
) -> None:
    mid = str(data.get("mandate_id"))
    where = f"write {event.proposal_id} under mandate {mid}"
    m = mandates.get(mid)
    if m is None:
        report.notes.append(f"{where}: the mandate was created before this range; not checked")
        return
    for code, message in _violations(m, tools.get(str(event.proposal_id)), event, data):
        report.fail(code, f"{where}: {message}")
    amount = data.get("amount_minor") or 0
    amount = amount if isinstance(amount, int) else 0
    m.held += amount
    m.count += 1
    held[str(event.proposal_id)] = (m, amount)
    constraints = m.data.get("constraints") or {}
    total, most = constraints.get("total_amount_minor"), constraints.get("max_count")
    if isinstance(total, int) and m.held > total:
        report.fail("mandate_overspent", f"{where}: {m.held} may have been spent of {total}")
    if isinstance(most, int) and m.count > most:
        report.fail("mandate_overspent", f"{where}: {m.count} writes of at most {most}")
    expected = None if not isinstance(total, int) else total - m.held
    if data.get("remaining_amount_minor") != expected:
        report.fail(
            "mandate_budget_mismatch",
            f"{where}: states {data.get('remaining_amount_minor')} left, the log gives {expected}",
        )


def _violations(
    m: _Mandate,
    created: tuple[str | None, str | None] | None,
    event: AuditEvent,
    data: dict[str, Any],
) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    c = m.data.get("constraints") or {}
    if m.active_at is None or m.active_at > event.seq:
        found.append(("mandate_not_approved", "the mandate's approvals were not complete"))
    if m.ended_at is not None and m.ended_at < event.seq:
        found.append(("mandate_ended", f"after the mandate ended (#{m.ended_at})"))
    if event.at >= int(m.data.get("expires_at") or 0):
        found.append(("mandate_expired", "after the mandate's validity window"))
    if created is None or created[0] != m.data.get("tool") or created[1] != data.get("args_digest"):
        found.append(("mandate_wrong_write", "not a write of the mandate's tool and digest"))
    if set(data.get("approvers") or ()) != set(m.approvers):
        found.append(("mandate_approvers_mismatch", "names other approvers than the mandate's"))
    amount = data.get("amount_minor")
    if "currency" in c and data.get("currency") != c["currency"]:
        found.append(("mandate_exceeded", f"in {data.get('currency')}, not {c['currency']}"))
    if "max_amount_minor" in c and not (
        isinstance(amount, int) and amount <= c["max_amount_minor"]
    ):
        found.append(("mandate_exceeded", f"{amount} is above the maximum {c['max_amount_minor']}"))
    resource = str(data.get("resource_id"))
    if "resources" in c and not any(_covers(p, resource) for p in c["resources"]):
        found.append(("mandate_exceeded", f"{resource} is not among the mandate's resources"))
    if "agents" in c and data.get("agent") not in c["agents"]:
        found.append(("mandate_exceeded", f"agent {data.get('agent')!r} is not allowed"))
    return found


def _covers(pattern: str, resource_id: str) -> bool:
    if pattern.endswith("*"):
        return resource_id.startswith(pattern[:-1])
    return resource_id == pattern
