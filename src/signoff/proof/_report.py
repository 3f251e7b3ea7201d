"""What a verification found: named findings, never a bare true/false, and what it proved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

CLOCK_SKEW_SECONDS = 300
"""How far an event's time may be after the checkpoint that covers it (clocks of
several workers); beyond it the checkpoint's signed time is a lie (a back-dated
signature of a retired key)."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One failed check: a stable ``code`` and where it failed."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(frozen=True, slots=True)
class Expectation:
    """What the reader expects the proof to prove (``--proposal``, ``--digest``, ``--args``)."""

    proposal_id: str | None = None
    args_digest: str | None = None
    arguments: Any = None
    """Canonical arguments whose digest (with the proven tool and version) must match."""

    def __bool__(self) -> bool:
        return any(x is not None for x in (self.proposal_id, self.args_digest, self.arguments))


@dataclass(slots=True)
class Report:
    """The outcome of verifying a bundle or a receipt offline.

    ``ok`` means every check passed; ``uncovered`` counts events after the
    last checkpoint (a failure unless the caller allowed them); ``proven``
    lists, per execution the proof vouches for, what it proves: proposal,
    operation, digest, resource, approvers, outcome, provider reference.
    """

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    events: int = 0
    checkpoints: int = 0
    covered: int = 0
    uncovered: int = 0
    executions: int = 0
    device_signatures: int = 0
    proven: list[dict[str, Any]] = field(default_factory=list)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    """Per approval: proposal, seq, subject, role, decided_at, and ``vouched_by`` — what
    vouches for it (``signoff``, ``device``, ``spc``, ``idp``; ``unchecked`` when its
    proposal is not among the events), with ``enrolment_vouched`` for a device."""
    signed_at: int | None = None
    """The signed time of the newest checkpoint (seconds): how fresh this proof is."""
    cosigned_by: dict[str, int] = field(default_factory=dict)
    """Witness name → the time it cosigned the newest checkpoint."""

    @property
    def ok(self) -> bool:
        return not self.findings

    def fail(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message))

    def to_dict(self) -> dict[str, Any]:
        """The report as ``signoff audit verify --json`` prints it."""
        return {
            "ok": self.ok,
            "findings": [{"code": f.code, "message": f.message} for f in self.findings],
            "notes": list(self.notes),
            "events": self.events,
            "checkpoints": self.checkpoints,
            "covered": self.covered,
            "uncovered": self.uncovered,
            "executions": self.executions,
            "device_signatures": self.device_signatures,
            "signed_at": self.signed_at,
            "cosigned_by": dict(self.cosigned_by),
            "approvals": list(self.approvals),
            "proven": list(self.proven),
        }
