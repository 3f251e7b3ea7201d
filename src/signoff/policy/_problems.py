"""What ``signoff policy check`` finds: one problem per line, with a code and where."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.exceptions import PolicyFileError


@dataclass(frozen=True, slots=True)
class Problem:
    """One finding in a policy file: a stable ``code``, the dotted place, what is wrong."""

    code: str
    where: str
    message: str

    def line(self) -> str:
        return f"error [{self.code}]: {self.where}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "where": self.where, "message": self.message}


def refuse(problems: list[Problem], source: str) -> PolicyFileError:
    """The one error raised for a file with problems; each problem is in its details."""
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return PolicyFileError(
        f"{source}: {first.where}: {first.message}{more} — run `signoff policy check {source}`",
        problems=[p.to_dict() for p in problems],
    )
