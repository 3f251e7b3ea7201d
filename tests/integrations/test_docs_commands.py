"""Every command in docs/INTEGRATIONS.md runs as written; the examples refund exactly once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "INTEGRATIONS.md"


def commands() -> list[str]:
    blocks = DOC.read_text().split("```sh\n")[1:]
    return [line for b in blocks for line in b.split("```", 1)[0].splitlines() if line.strip()]


def test_the_page_documents_each_example_and_the_notifier() -> None:
    documented = " ".join(commands())
    for needle in ("openai_agents_sdk.py", "langgraph_refund.py", "signoff notify"):
        assert needle in documented


@pytest.mark.parametrize("command", commands())
def test_the_command_runs_as_written(command: str) -> None:
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    if "examples/" in command and command.endswith(".py"):
        assert "execution: succeeded" in done.stdout
        assert "provider ledger: [('ord_1001', 19900, 'CNY')]" in done.stdout
