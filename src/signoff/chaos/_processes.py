"""The real processes of a chaos run: workers to kill, and reconcilers to race."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO

from signoff.gate._hooks import HookPoint

WORKER_TIMEOUT_S = 60.0
ANYWHERE = "anywhere"
BEFORE_CONSUME = "before_consume"
STAGES = (BEFORE_CONSUME, *(p.value for p in HookPoint), "finished")


@dataclass(frozen=True, slots=True)
class Setup:
    db: str
    shop: str
    lease: float


@dataclass(frozen=True, slots=True)
class WorkerEnd:
    """How a worker ended: killed (and where it said it was), or on its own."""

    killed: bool
    said: str
    seconds: float
    detail: str = ""


@contextlib.contextmanager
def _worker(
    setup: Setup, point: str, proposal_id: str, token: str
) -> Iterator[subprocess.Popen[str]]:
    job = {
        "db": setup.db,
        "shop": setup.shop,
        "lease": setup.lease,
        "point": point,
        "proposal_id": proposal_id,
        "token": token,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "signoff.chaos._worker"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin is not None
    watchdog = threading.Timer(WORKER_TIMEOUT_S, process.kill)
    watchdog.start()
    try:
        process.stdin.write(json.dumps(job) + "\n")
        process.stdin.flush()
        yield process
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
        process.communicate()


def kill_at_point(setup: Setup, point: str, proposal_id: str, token: str) -> WorkerEnd:
    """Start a worker, wait until it reports reaching ``point``, then SIGKILL it."""
    with _worker(setup, point, proposal_id, token) as process:
        assert process.stdout is not None and process.stderr is not None
        said = process.stdout.readline().strip()
        if not said.startswith("reached "):
            return WorkerEnd(False, said, 0.0, process.stderr.read().strip()[-500:])
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        return WorkerEnd(process.returncode == -signal.SIGKILL, said, 0.0)


def kill_anywhere(setup: Setup, proposal_id: str, token: str, delay: float | None) -> WorkerEnd:
    """Start a worker and SIGKILL it ``delay`` seconds into its execute call, wherever it is.

    ``delay=None`` lets it finish: how long an execute takes, to aim the kills.
    ``said`` is where the kill landed: ``before_consume`` (the token was not
    yet consumed), the last named point passed, or ``finished``.
    """
    with _worker(setup, ANYWHERE, proposal_id, token) as process:
        assert process.stdout is not None and process.stderr is not None
        said = process.stdout.readline().strip()
        if said != "go":
            return WorkerEnd(False, said, 0.0, process.stderr.read().strip()[-500:])
        started = time.monotonic()
        if delay is None:
            lines = list(_until_finished(process.stdout))
        else:
            time.sleep(delay)
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGKILL)
            process.wait()
            lines = process.stdout.read().splitlines()
        elapsed = time.monotonic() - started
        return WorkerEnd(process.returncode == -signal.SIGKILL, _landed(lines), elapsed)


def _until_finished(stdout: IO[str]) -> Iterator[str]:
    for line in stdout:
        yield line
        if line.startswith(("finished", "refused")):
            return


def _landed(lines: list[str]) -> str:
    if any(line.startswith(("finished", "refused")) for line in lines):
        return "finished"
    passed = [line.split()[1] for line in lines if line.startswith("at ")]
    return passed[-1] if passed else BEFORE_CONSUME


def reconcile_round(setup: Setup, count: int) -> Counter[str]:
    """``count`` real ``signoff reconcile --once`` processes at once; who handled what."""
    command = [
        sys.executable, "-m", "signoff", "reconcile", "--once", "--json",
        "--older-than", "0", "--limit", "100000", "--lease", "60",
        "--db", setup.db, "--demo", "--demo-shop", setup.shop,
        "--directory", "signoff.chaos._world:chaos_directory",
    ]  # fmt: skip
    processes = [
        # Our own interpreter and command line; only the run's own URLs are passed.
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603
        for _ in range(count)
    ]
    handled: Counter[str] = Counter()
    for process in processes:
        out, err = process.communicate()
        if process.returncode != 0:
            sys.stderr.write(f"chaos: a reconciler failed ({process.returncode}): {err[-2000:]}\n")
        handled.update({json.loads(line)["execution_id"] for line in out.splitlines() if line})
    return handled
