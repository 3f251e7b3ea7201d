"""What a verification found: named findings, never a bare true/false."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Finding:
    """One failed check: a stable ``code`` and where it failed."""

    code: str
    message: str

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


@dataclass(slots=True)
class Report:
    """The outcome of verifying a bundle or a receipt offline.

    ``ok`` means every check passed; ``uncovered`` counts events after the
    last checkpoint, which nothing signed vouches for yet.
    """

    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    events: int = 0
    checkpoints: int = 0
    covered: int = 0
    uncovered: int = 0
    executions: int = 0
    device_signatures: int = 0

    @property
    def ok(self) -> bool:
        return not self.findings

    def fail(self, code: str, message: str) -> None:
        self.findings.append(Finding(code, message))
