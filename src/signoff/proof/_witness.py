"""A client of c2sp.org/tlog-witness: ask an independent witness to cosign a checkpoint.

``POST <url>/add-checkpoint`` with ``old <size>``, the consistency proof from
that size (one base64 hash a line), a blank line and the signed checkpoint.
``200``: the witness's cosignature lines (c2sp.org/tlog-cosignature).
``409`` with ``text/x.tlog.size``: the witness's latest size is another — the
caller proves consistency from that one and asks again. Any other answer is
a refusal (a fork, a bad proof, an unknown log): the witness did not cosign.
Standard library only (``urllib``), so ``signoff.proof`` stays free of HTTP stacks.
"""

from __future__ import annotations

import base64
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass

from signoff.proof._note import (
    Cosigner,
    NoteRejected,
    cosignature_times,
    parse_signature_line,
    parse_vkey,
)

SIZE_TYPE = "text/x.tlog.size"
TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Witness:
    """A witness this deployment submits to: its ``add-checkpoint`` base URL and vkey."""

    url: str
    cosigner: Cosigner

    @property
    def name(self) -> str:
        return self.cosigner.name


class WitnessConflict(Exception):
    """409: the witness's latest cosigned size for this log is ``size``."""

    def __init__(self, size: int) -> None:
        super().__init__(f"the witness is at size {size}")
        self.size = size


class WitnessRefused(Exception):
    """The witness answered, and did not cosign (or could not be reached)."""


def add_checkpoint_body(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    lines = [f"old {old_size}", *(base64.b64encode(h).decode() for h in proof)]
    return ("\n".join(lines) + "\n\n" + note).encode()


def submit(
    witness: Witness,
    note: str,
    old_size: int,
    proof: Sequence[bytes],
    *,
    timeout: float = TIMEOUT_SECONDS,
) -> list[str]:
    """The witness's verified cosignature lines for ``note``, or a raised refusal/conflict."""
    if not witness.url.startswith(("http://", "https://")):
        raise WitnessRefused(f"{witness.name}: the witness URL is not http(s)")
    request = urllib.request.Request(  # noqa: S310 - http(s) only, checked above
        witness.url.rstrip("/") + "/add-checkpoint",
        data=add_checkpoint_body(old_size, proof, note),
        method="POST",
        headers={"Content-Type": "text/plain; charset=utf-8"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310 - http(s) only
            body = answer.read(64 * 1024).decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        text = exc.read(4096).decode("utf-8", "replace")
        if exc.code == 409 and exc.headers.get_content_type() == SIZE_TYPE:
            size = text.strip()
            if size.isascii() and size.isdigit():
                raise WitnessConflict(int(size)) from None
        raise WitnessRefused(f"{witness.name} answered {exc.code}: {text.strip()[:200]}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise WitnessRefused(f"{witness.name} is unreachable ({exc})") from None
    lines = [line for line in body.split("\n") if line]
    try:
        for line in lines:
            parse_signature_line(line)
        cosigned = note + "".join(f"{line}\n" for line in lines)
        if witness.name not in cosignature_times(cosigned, [witness.cosigner]):
            raise NoteRejected("no cosignature from its key")
    except NoteRejected as exc:
        raise WitnessRefused(f"{witness.name} sent an unusable cosignature ({exc})") from None
    return lines


WITNESSES_ENV = "SIGNOFF_WITNESSES"


def parse_witnesses(text: str) -> tuple[Witness, ...]:
    """``[{"url": "https://…", "vkey": "<name>+<key ID>+<key>"}, …]`` (``SIGNOFF_WITNESSES``)."""
    import json

    from signoff.exceptions import ProofFormatError

    try:
        entries = json.loads(text) if text.strip() else []
    except json.JSONDecodeError as exc:
        raise ProofFormatError(f"the witness list is not JSON ({exc.msg})") from None
    if not isinstance(entries, list):
        raise ProofFormatError("the witness list is a JSON array of {url, vkey}")
    witnesses = []
    for entry in entries:
        if not isinstance(entry, dict) or not all(
            isinstance(entry.get(k), str) for k in ("url", "vkey")
        ):
            raise ProofFormatError('each witness is {"url": …, "vkey": …}')
        if not entry["url"].startswith(("http://", "https://")):
            raise ProofFormatError(f"witness URL {entry['url']!r} is not http(s)")
        try:
            witnesses.append(Witness(entry["url"], parse_vkey(entry["vkey"])))
        except NoteRejected as exc:
            raise ProofFormatError(str(exc)) from None
    return tuple(witnesses)
