"""The adapters' examples run offline, as documented, and refund exactly once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("example", ["openai_agents_sdk.py", "langgraph_refund.py"])
def test_the_example_runs_as_documented(example: str) -> None:
    """`python examples/<example>` exits 0 and its provider ledger shows the one refund."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "execution: succeeded" in done.stdout
    assert "provider ledger: [('ord_1001', 19900, 'CNY')]" in done.stdout
