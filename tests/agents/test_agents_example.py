"""examples/openai_agent.py runs its whole loop offline and refunds exactly once."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "openai_agent.py"


def test_the_example_loop_refunds_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Clarification, request, approval on the page, status, execute: exit 0, one ledger entry."""
    example = runpy.run_path(str(EXAMPLE), run_name="signoff_example")
    assert example["main"](tmp_path) == 0
    out = capsys.readouterr().out
    assert "clarification: clarification_needed" in out
    assert "execution: succeeded" in out
    assert "provider ledger: [('ord_1001', 19900, 'CNY')]" in out
