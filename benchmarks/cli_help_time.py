"""How long `signoff --help` takes, start to exit (the budget is 0.25 s; tests never assert it).

    .venv/bin/python benchmarks/cli_help_time.py --runs 20

Prints the median and the fastest of N runs of the installed console script.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    script = Path(sys.executable).parent / "signoff"
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([str(script), "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - started)
    print(
        f"signoff --help: median {statistics.median(times):.3f} s, "
        f"fastest {min(times):.3f} s over {runs} runs"
    )


if __name__ == "__main__":
    main()
