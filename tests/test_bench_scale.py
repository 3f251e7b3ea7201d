"""benchmarks/bench_scale.py keeps working: tiny sizes, every figure printed, no time asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = "--events 0 300 --pending 200 --flows 5"


def test_the_scale_bench_runs_and_prints_its_ratios() -> None:
    """Two log sizes and a few pending proposals: flows, inbox, checkpoint, receipt, bundle."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "bench_scale.py"),
            "--events",
            "0",
            "300",
            "--pending",
            "200",
            "--flows",
            "5",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for label in ("0 events", "300 events", "200 pending"):
        assert re.search(rf"^{label} +[0-9.]+ +[0-9.]+ ", out, re.M), out
    # The bundles verified (the bench asserts the report is ok) and were measured.
    assert re.search(r"^300 events +\d[\d,]* +[\d,]+ ", out, re.M), out
    assert "passkey lookup" in out and "first checkpoint over them" in out


def test_the_tracing_bench_runs_and_prints_both_modes() -> None:
    """Tracing off and on, a few flows each: both figures and the spans per flow printed."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_tracing.py"), "--flows", "3"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^tracing off: wall [0-9.]+ ms", done.stdout, re.M), done.stdout
    found = re.search(r"^tracing on: .*\(([0-9.]+) spans per flow\)", done.stdout, re.M)
    assert found and float(found[1]) >= 5, done.stdout  # propose, decide, execute and children
