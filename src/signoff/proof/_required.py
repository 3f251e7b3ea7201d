"""What the reader requires of the approvals: ``--require-evidence idp|device|any``.

Each approval was classified by what vouches for it (``_approvals.vouched_by``); a
reader who asks for ``idp`` or ``device`` fails a proof whose approvals are weaker,
whatever the policy recorded in the log says (the operator wrote that policy too).
"""

from __future__ import annotations

from signoff.exceptions import InvalidRequest
from signoff.proof._approvals import DEVICE_KINDS, IDP, SIGNOFF, UNCHECKED
from signoff.proof._report import Report

REQUIRE_EVIDENCE = ("idp", "device", "any")
REQUIRED_STRENGTH = {"any": 0, "device": 1, "idp": 2}
"""idp > device (a WebAuthn or SPC assertion) > any."""
STRENGTH = {UNCHECKED: -1, SIGNOFF: 0, **dict.fromkeys(DEVICE_KINDS, 1), IDP: 2}


def check_required(report: Report, required: str | None) -> None:
    """Every approval (of a proposal or a mandate) at least as strongly vouched as ``required``."""
    if required not in REQUIRED_STRENGTH:
        if required is None:
            return
        raise InvalidRequest(f"require_evidence is one of {', '.join(REQUIRE_EVIDENCE)}")
    needed = REQUIRED_STRENGTH[required]
    for entry in report.approvals if needed else ():
        by = entry["vouched_by"]
        # A passkey nobody but signoff vouches for is signoff's word (device_enrolment_unvouched).
        strength = SIGNOFF if entry.get("enrolment_vouched") is False else by
        if STRENGTH[strength] < needed:
            what = (
                "its proposal is not among these events"
                if by == UNCHECKED
                else f"vouched by {by}"
                + (", from an enrolment nobody vouched for" if strength != by else "")
            )
            report.fail(
                "evidence_insufficient",
                f"#{entry['seq']} by {entry['subject']!r} ({entry['proposal_id']}): {what},"
                f" {required} was required",
            )


def annotate_proven(report: Report) -> None:
    """Name, on each proven execution's approvers, what vouches for them."""
    found = {(a["proposal_id"], a["subject"], a["decided_at"]): a for a in report.approvals}
    for proven in report.proven:
        for approver in proven["approvers"]:
            key = (proven["proposal_id"], approver["subject"], approver["decided_at"])
            entry = found.get(key, {})
            approver["vouched_by"] = entry.get("vouched_by", SIGNOFF)
            if "enrolment_vouched" in entry:
                approver["enrolment_vouched"] = entry["enrolment_vouched"]
