"""docs/TOOLS.md's first tool: ≤ 40 lines, and it works in process and behind `signoff serve`."""

from __future__ import annotations

import runpy
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from signoff import exceptions
from signoff.client import SignoffClient
from signoff.testing import FakeProvider
from tests.docs_tool import python_blocks
from tests.serving import clean_env, serving

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 40
EMAIL = {"to": "kim@partner.example", "subject": "Invoice", "body": "Hello Kim,\n\nattached."}


@pytest.fixture
def first_tool(tmp_path: Path) -> Path:
    """The first block saved as first_tool.py, as the page says."""
    (tmp_path / "first_tool.py").write_text(python_blocks()[0])
    return tmp_path


def test_the_first_tool_is_at_most_40_lines() -> None:
    """A send_email tool with a real preview and risk, in ≤ 40 non-blank lines."""
    first = python_blocks()[0]
    assert len([line for line in first.splitlines() if line.strip()]) <= MAX_LINES
    assert "def preview" in first and "def risk" in first
    assert "from signoff._" not in first and "signoff.catalog._" not in first


def test_the_first_tool_in_process(first_tool: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The page's own test block: propose, approve, execute, replay refused, one e-mail."""
    monkeypatch.chdir(first_tool)
    monkeypatch.syspath_prepend(str(first_tool))
    monkeypatch.delitem(sys.modules, "first_tool", raising=False)
    script = first_tool / "test_block.py"
    script.write_text(python_blocks()[1])
    namespace = runpy.run_path(str(script))
    records = namespace["mail"].records()
    assert [(r.request_key, r.payload) for r in records] == [
        (namespace["proposal"].request_key, EMAIL)
    ]


@pytest.fixture
def served(first_tool: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`signoff serve --catalog first_tool:catalog` in its directory, as the page shows it."""
    env = clean_env(
        SIGNOFF_ENVIRONMENT="development",
        SIGNOFF_JWT_ISSUER="dev-issuer",
        SIGNOFF_TOKEN_KEY=secrets.token_hex(32),
        SIGNOFF_JWT_HS256_SECRET=secrets.token_hex(32),
        PYTHONPATH=str(ROOT / "src"),  # signoff itself; first_tool.py is found in the directory
    )
    args = ["--catalog", "first_tool:catalog", "--db", "signoff.db"]
    with serving(args, env=env, cwd=first_tool) as base_url:
        yield base_url, env


def dev_token(env: dict[str, str], cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "signoff", "dev-token", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.mark.slow
def test_the_first_tool_over_a_real_server(
    first_tool: Path, served: tuple[str, dict[str, str]]
) -> None:
    """Over HTTP: the same flow; the outbox the server wrote holds one e-mail."""
    base_url, env = served
    agent_jwt = dev_token(env, first_tool, "--sub", "u_7", "--tenant", "acme", "--act", "agent:x")
    erin_jwt = dev_token(
        env, first_tool, "--sub", "erin", "--tenant", "acme", "--role", "email_approver"
    )
    with SignoffClient(base_url, agent_jwt) as agent:
        proposal = agent.propose("send_email", EMAIL)
        assert proposal.risk.level == "high" and proposal.retype == ["to"]
        erin = agent.as_caller(erin_jwt)
        with pytest.raises(exceptions.RetypeMismatch):
            erin.approve(proposal, retyped={"to": "kim@partner.exampl"})
        erin.approve(proposal, retyped={"to": EMAIL["to"]})
        token = agent.confirmation_token(proposal.proposal_id)
        outcome = agent.execute(proposal.proposal_id, token)
        assert outcome.receipt is not None and outcome.receipt.status == "succeeded"
        with pytest.raises(exceptions.AlreadyConsumed):
            agent.execute(proposal.proposal_id, token)
    records = FakeProvider(first_tool / "outbox.sqlite").records()
    assert [(r.request_key, r.payload) for r in records] == [(outcome.receipt.request_key, EMAIL)]
