"""Slack end to end against a real `signoff serve --demo`: the stand-in Slack Web API on
127.0.0.1 receives the message, clicks are signed with slack_sdk's own signer, the agent
executes, and the demo provider's ledger shows one refund."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.client import SignoffClient
from tests.channels.conftest import SECRET, TEAM, action_ids, blocks_text, button, signed
from tests.channels.standin import SlackStandIn, slack_standin
from tests.conftest import REFUND
from tests.http.test_e2e_serve import shop_ledger
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow


@dataclass
class Running:
    base_url: str
    db: Path
    standin: SlackStandIn

    def click(
        self, action: str, proposal_id: str, version: int, *, user: str, age: float = 0
    ) -> httpx.Response:
        value = json.dumps({"p": proposal_id, "v": version})
        body, headers = signed(
            button(action, value, user=user, channel=f"D{user}"), at=time.time() - age
        )
        return httpx.post(f"{self.base_url}/slack/events", content=body, headers=headers)

    def message_to(self, user: str, *, where: Any = None) -> dict[str, Any]:
        """Wait for the server's notifier to post (or redraw) the DM to ``user``."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = [m for (c, _), m in self.standin.messages.items() if c == f"D{user}"]
            if found and (where is None or where(found[0])):
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"no message to {user}: {self.standin.calls}")


def _signoff(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "signoff", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("slack-serve")
    db = folder / "signoff.db"
    _signoff("db", "upgrade", "--db", str(db))
    _signoff(
        "channels", "link", "slack", "--workspace", TEAM, "--user", "UALICE", "--db", str(db),
        "--tenant", "acme", "--sub", "alice", "--role", "refund_approver", "--by", "olga",
    )  # fmt: skip
    with slack_standin() as standin:
        config = folder / "channels.toml"
        config.write_text(
            "interval_seconds = 0.2\n[slack]\nsigning_secret_env = 'SLACK_SIGNING_SECRET'\n"
            f"api_url = '{standin.url}'\n"
            f"[[slack.workspaces]]\nteam_id = '{TEAM}'\ntenant = 'acme'\n"
            "bot_token_env = 'SLACK_BOT_TOKEN'\n"
        )
        env = clean_env(
            SIGNOFF_CHANNELS_CONFIG=str(config),
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_BOT_TOKEN="xoxb-e2e",
        )
        with serving(["--demo", "--db", str(db)], env=env) as base_url:
            yield Running(base_url, db, standin)


def _agent(running: Running) -> SignoffClient:
    jwt = _signoff(
        "dev-token", "--demo", "--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"
    )
    return SignoffClient(running.base_url, jwt)


def test_slack_approval_end_to_end(running: Running) -> None:
    """Message sent → signed click → decision recorded → message updated → the agent
    executes → one refund in the provider's ledger."""
    with _agent(running) as agent:
        proposal = agent.propose("refund_order", REFUND)
        message = running.message_to("UALICE")
        assert "¥199.00" in blocks_text(message) and "untrusted" in blocks_text(message)
        assert action_ids(message)[:2] == ["signoff.approve", "signoff.reject"]
        clicked = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="UALICE"
        )
        assert clicked.status_code == 200, clicked.text
        updated = running.message_to("UALICE", where=lambda m: action_ids(m) == ["signoff.open"])
        assert "alice approved at" in blocks_text(updated)
        token = agent.confirmation_token(proposal.proposal_id)
        outcome = agent.execute(proposal.proposal_id, token)
        assert outcome.receipt is not None and outcome.receipt.approvers == ["alice"]
    assert shop_ledger(running.db) == [("acme", "ord_1001", 19900)]


def test_refusals_against_the_running_server(running: Running) -> None:
    """A forged signature and a payload older than five minutes are 401; an unlinked user
    and a high-risk proposal's button decide nothing."""
    with _agent(running) as agent:
        proposal = agent.propose("refund_order", {**REFUND, "order_id": "ord_1002"})
        high = agent.propose(
            "refund_order", {**REFUND, "order_id": "ord_9200", "amount_minor": 300000}
        )
        value = json.dumps({"p": proposal.proposal_id, "v": proposal.version})
        body, headers = signed(
            button("signoff.approve", value, user="UALICE", channel="DUALICE"),
            at=time.time(),
            secret="a-forged-secret-000000000000000000",
        )
        forged = httpx.post(f"{running.base_url}/slack/events", content=body, headers=headers)
        assert forged.status_code == 401
        stale = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="UALICE", age=301
        )
        assert stale.status_code == 401
        unlinked = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="UMALLORY"
        )
        assert unlinked.status_code == 200
        running.click("signoff.approve", high.proposal_id, high.version, user="UALICE")
        assert agent.proposal(proposal.proposal_id).status == "awaiting_confirmation"
        assert agent.proposal(high.proposal_id).status == "awaiting_confirmation"
    told = running.standin.ephemeral_to("UMALLORY")
    assert told and "not linked" in told[-1]
    assert "confirmation page" in running.standin.ephemeral_to("UALICE")[-1]
    assert ("acme", "ord_1002", 19900) not in shop_ledger(running.db)
