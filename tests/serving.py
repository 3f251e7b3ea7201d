"""Real `signoff serve` processes for the tests: a free port, readiness, a clean stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, AnyStr

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any SIGNOFF_ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    env.update(extra)
    return env


def wait_ready(base_url: str, process: subprocess.Popen[AnyStr], *, within: float = 180) -> None:
    """Poll ``/readyz`` until 200; fail with the server's output if it exits first."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"signoff serve exited early: {_output(process)}")
        try:
            if httpx.get(f"{base_url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{base_url} never became ready")


def stop(process: subprocess.Popen[AnyStr], sig: signal.Signals = signal.SIGTERM) -> None:
    """Ask the server to stop, kill it if it does not within 20 s, close its pipes."""
    process.send_signal(sig)
    try:
        process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


@contextmanager
def serving(
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    output: IO[bytes] | None = None,
) -> Iterator[str]:
    """``signoff serve <args>`` on a free port until the block ends; yields its base URL.

    The output goes to ``output`` when given (a log file to read afterwards), else to a pipe
    that is shown if the server exits before it is ready.
    """
    port = free_port()
    command = [sys.executable, "-m", "signoff", "serve", *args, "--port", str(port)]
    if "--log-level" not in args:
        command += ["--log-level", "warning"]
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=clean_env() if env is None else env,
        stdout=output if output is not None else subprocess.PIPE,
        stderr=output if output is not None else subprocess.STDOUT,
    )
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base_url, process)
        yield base_url
    finally:
        stop(process)


def _output(process: subprocess.Popen[AnyStr]) -> str:
    if process.stdout is None:
        return "(output not captured)"
    text = process.stdout.read()
    return text.decode(errors="replace") if isinstance(text, bytes) else text
