"""What the signer signed last, per log, kept with the signing key — never in the store.

Each log's entry is its own small JSON file in the state directory (by
default ``<key file>.state/``, or ``SIGNOFF_SIGNER_STATE``)::

    {"format": "signoff-signer-state/1", "origin": …, "size": n, "root": <base64>,
     "head": <hex hash of event n>, "frontier": [<base64>, …], "signed_at": <seconds>}

The signer extends a log only from this view: new events must link to
``head`` and fold onto ``frontier``, so the new tree is consistent with the
last one by construction, and a shrunk or rewritten log is refused. Each
entry is updated under an exclusive ``flock`` on its ``.lock`` file (several
``serve`` workers and a cron ``audit checkpoint`` on one host take turns) by
writing a temporary file, ``fsync``-ing it, renaming it over the old one and
``fsync``-ing the directory: a crash leaves the old view or the new, never
half of one.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from signoff.audit._chain import GENESIS
from signoff.exceptions import SigningKeyError

STATE_FORMAT = "signoff-signer-state/1"
STATE_ENV = "SIGNOFF_SIGNER_STATE"


@dataclass(frozen=True, slots=True)
class SignedView:
    """The last checkpoint the signer made for one log: enough to extend it, and nothing else."""

    origin: str
    size: int
    root: bytes
    head: str
    frontier: tuple[bytes, ...]
    signed_at: int

    @classmethod
    def empty(cls, origin: str) -> SignedView:
        return cls(origin, 0, hashlib.sha256(b"").digest(), GENESIS, (), 0)

    def to_json(self) -> str:
        document = {
            "format": STATE_FORMAT,
            "origin": self.origin,
            "size": self.size,
            "root": base64.b64encode(self.root).decode(),
            "head": self.head,
            "frontier": [base64.b64encode(h).decode() for h in self.frontier],
            "signed_at": self.signed_at,
        }
        return json.dumps(document, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str) -> SignedView:
        try:
            d: Any = json.loads(text)
            if d.get("format") != STATE_FORMAT:
                raise ValueError("format")
            return cls(
                str(d["origin"]), int(d["size"]), base64.b64decode(d["root"]), str(d["head"]),
                tuple(base64.b64decode(h) for h in d["frontier"]), int(d["signed_at"]),
            )  # fmt: skip
        except (ValueError, KeyError, TypeError, AttributeError):
            raise SigningKeyError(
                f"the signer state {where} is damaged — restore it from a backup, or"
                " re-initialise it with `signoff audit init-signer` (audited)"
            ) from None


class LogSlot(Protocol):
    """One log's entry, held exclusively while the signer decides and signs."""

    @property
    def view(self) -> SignedView | None: ...

    def save(self, view: SignedView) -> None: ...


class SignerState(Protocol):
    """Where the signer keeps what it signed: a directory beside the key file, or memory."""

    def hold(self, origin: str) -> contextlib.AbstractContextManager[LogSlot]: ...

    def describe(self) -> str: ...


class _Slot:
    def __init__(self, view: SignedView | None, write: Any) -> None:
        self.view = view
        self._write = write

    def save(self, view: SignedView) -> None:
        self._write(view)
        self.view = view


class FileSignerState:
    """One file per log in ``directory`` (mode 0700), each updated atomically under a lock."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def describe(self) -> str:
        return str(self.directory)

    def _paths(self, origin: str) -> tuple[Path, Path]:
        name = hashlib.sha256(origin.encode()).hexdigest()[:32]
        return self.directory / f"{name}.json", self.directory / f"{name}.lock"

    @contextlib.contextmanager
    def hold(self, origin: str) -> Iterator[LogSlot]:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        path, lock = self._paths(origin)
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            view = self._read(path, origin)
            yield _Slot(view, lambda new: self._write(path, new))
        finally:
            os.close(descriptor)  # closing the descriptor releases the lock

    def _read(self, path: Path, origin: str) -> SignedView | None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SigningKeyError(f"cannot read the signer state {path} ({exc.strerror})") from None
        view = SignedView.from_json(text, str(path))
        if view.origin != origin:
            raise SigningKeyError(f"the signer state {path} is for log {view.origin!r}")
        return view

    def _write(self, path: Path, view: SignedView) -> None:
        temporary = path.with_name(f".{path.name}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(view.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        directory = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


class MemorySignerState:
    """The signer's memory in this process only: for tests and a demo whose store is as
    short-lived. A restart forgets everything, so a real deployment uses a directory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._views: dict[str, SignedView] = {}

    def describe(self) -> str:
        return "this process's memory"

    @contextlib.contextmanager
    def hold(self, origin: str) -> Iterator[LogSlot]:
        with self._lock:
            yield _Slot(self._views.get(origin), lambda v: self._views.__setitem__(origin, v))


def state_directory_for(keys_file: str | Path) -> Path:
    """The default state directory: ``<key file>.state`` beside the key file."""
    path = Path(keys_file)
    return path.with_name(path.name + ".state")
