"""Teams end to end against a real `signoff serve --demo`: a stand-in Bot Connector on
127.0.0.1 (its OpenID keys and REST API) and activities with a Bot Connector JWT signed by a
test key published there; the agent executes and the provider's ledger shows one refund."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff.client import SignoffClient
from tests.channels.standin import BotStandIn, bot_standin
from tests.channels.teams_world import (
    AAD_TENANT,
    APP_ID,
    KID,
    activity,
    card_text,
    connector_keys,
    verbs,
)
from tests.channels.test_slack_server import _signoff
from tests.conftest import REFUND
from tests.http.test_e2e_serve import shop_ledger
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Running:
    base_url: str
    db: Path
    standin: BotStandIn
    key: Any

    def send(self, body: dict[str, Any], *, key: Any = None, age: float = 0) -> httpx.Response:
        import jwt

        now = time.time() - age
        token = jwt.encode(
            {
                "iss": "https://api.botframework.com",
                "aud": APP_ID,
                "serviceurl": self.standin.service_url,
                "nbf": int(now) - 5,
                "exp": int(now) + 3600,
            },
            key or self.key,
            algorithm="RS256",
            headers={"kid": KID},
        )
        return httpx.post(
            f"{self.base_url}/teams/messages",
            json=body,
            headers={"authorization": f"Bearer {token}"},
            timeout=30,
        )

    def click(
        self, verb: str, proposal_id: str, version: int, *, user: str, **kw: Any
    ) -> httpx.Response:
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": verb,
                "data": {"p": proposal_id, "v": version},
            }
        }
        body = activity(
            "invoke",
            user=user,
            service_url=self.standin.service_url,
            name="adaptiveCard/action",
            value=value,
        )
        return self.send(body, **kw)

    def card_in(self, conversation: str, *, where: Any = None) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cards = self.standin.cards_in(conversation)
            if cards and (where is None or where(cards[0])):
                return cards[0]
            time.sleep(0.05)
        raise AssertionError(f"no card in {conversation}: {self.standin.calls}")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    folder = tmp_path_factory.mktemp("teams-serve")
    db = folder / "signoff.db"
    _signoff("db", "upgrade", "--db", str(db))
    _signoff(
        "channels", "link", "teams", "--workspace", AAD_TENANT, "--user", "aad-alice",
        "--db", str(db), "--tenant", "acme", "--sub", "alice", "--role", "refund_approver",
    )  # fmt: skip
    key, jwks = connector_keys()
    with bot_standin(jwks) as standin:
        config = folder / "channels.toml"
        config.write_text(
            "interval_seconds = 0.2\n[teams]\n"
            f"app_id = '{APP_ID}'\n"
            f"openid_metadata_url = '{standin.metadata_url}'\n"
            "credentials_factory = 'tests.channels.teams_world:stand_in_credentials'\n"
            f"[[teams.tenants]]\naad_tenant_id = '{AAD_TENANT}'\ntenant = 'acme'\n"
        )
        env = clean_env(SIGNOFF_CHANNELS_CONFIG=str(config))
        with serving(["--demo", "--db", str(db)], env=env, cwd=ROOT) as base_url:
            yield Running(base_url, db, standin, key)


def _agent(running: Running) -> SignoffClient:
    jwt = _signoff(
        "dev-token", "--demo", "--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"
    )
    return SignoffClient(running.base_url, jwt)


def test_teams_approval_end_to_end(running: Running) -> None:
    """Card sent → Action.Execute with a Bot Connector token → decision recorded → card
    updated → the agent executes → one refund in the provider's ledger."""
    hello = activity("message", user="alice", service_url=running.standin.service_url, text="hi")
    assert running.send(hello).status_code == 200
    with _agent(running) as agent:
        proposal = agent.propose("refund_order", REFUND)
        card = running.card_in("a:chat-alice")
        assert "¥199.00" in card_text(card) and verbs(card)[0] == "signoff.approve"
        answer = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="alice"
        )
        assert answer.status_code == 200, answer.text
        assert "You approved" in card_text(answer.json()["value"])
        updated = running.card_in("a:chat-alice", where=lambda c: verbs(c) == ["open:Open"])
        assert "alice approved at" in card_text(updated)
        token = agent.confirmation_token(proposal.proposal_id)
        outcome = agent.execute(proposal.proposal_id, token)
        assert outcome.receipt is not None and outcome.receipt.approvers == ["alice"]
    assert shop_ledger(running.db) == [("acme", "ord_1001", 19900)]


def test_refusals_against_the_running_server(running: Running) -> None:
    """A token signed by another key and an expired one are 401; an unlinked user and a
    high-risk proposal decide nothing."""
    other, _ = connector_keys()
    with _agent(running) as agent:
        proposal = agent.propose("refund_order", {**REFUND, "order_id": "ord_1002"})
        high = agent.propose(
            "refund_order", {**REFUND, "order_id": "ord_9200", "amount_minor": 300000}
        )
        forged = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="alice", key=other
        )
        assert forged.status_code == 401
        late = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="alice", age=3600 + 301
        )
        assert late.status_code == 401
        unlinked = running.click(
            "signoff.approve", proposal.proposal_id, proposal.version, user="mallory"
        )
        assert "not linked" in card_text(unlinked.json()["value"])
        risky = running.click("signoff.approve", high.proposal_id, high.version, user="alice")
        assert "Nothing was decided" in card_text(risky.json()["value"])
        assert agent.proposal(proposal.proposal_id).status == "awaiting_confirmation"
        assert agent.proposal(high.proposal_id).status == "awaiting_confirmation"
    assert ("acme", "ord_1002", 19900) not in shop_ledger(running.db)
