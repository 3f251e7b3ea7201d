"""CPU seconds each `signoff` subcommand costs to start: the best of N runs (docs/PERFORMANCE.md).

    .venv/bin/python scripts/cli_startup.py [--runs 5]

Each command runs in a fresh interpreter in a scratch directory (its own data directory and
store); the figure is user + system CPU of that child, so a loaded machine adds less noise
than wall time would. Prints one row per command, then the load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

COMMANDS = [
    ["--help"],
    ["dev-token", "--demo", "--sub", "alice", "--tenant", "acme", "--role", "refund_approver"],
    ["keys", "generate", "--out", "keys-{run}.json"],
    ["db", "upgrade", "--db", "signoff.db"],
    ["roles", "list", "--db", "signoff.db", "--tenant", "acme"],
    ["audit", "verify", "--db", "signoff.db"],
    ["tools", "--demo", "--format", "openai"],
    ["serve", "--help"],
    ["tools", "--demo", "--format", "mcp"],
]


def cpu_of(command: list[str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(  # noqa: S603 - this interpreter running signoff
        [sys.executable, "-m", "signoff", *command],
        cwd=cwd,
        env={**os.environ, "SIGNOFF_DATA_DIR": str(cwd / "data")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="signoff-startup-") as scratch:
        cwd = Path(scratch)
        cpu_of(["db", "upgrade", "--db", "signoff.db"], cwd)
        for command in COMMANDS:
            best = min(cpu_of([a.format(run=i) for a in command], cwd) for i in range(runs))
            print(f"{best:5.2f} s  signoff {' '.join(command).format(run=0)}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
