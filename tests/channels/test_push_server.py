"""Web Push end to end against a real `signoff serve --demo`: a proposal made over the API
reaches the stand-in push service on 127.0.0.1, VAPID-signed and aes128gcm-encrypted."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from signoff import open_store
from signoff.channels._push import new_vapid_keys
from signoff.client import SignoffClient
from signoff.store._sql import PushSubscription
from tests.channels.standin import push_standin
from tests.channels.test_slack_server import _signoff
from tests.conftest import REFUND
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow


def test_a_proposal_made_over_the_api_is_pushed_to_the_approvers_phone(tmp_path: Path) -> None:
    db = tmp_path / "signoff.db"
    _signoff("db", "upgrade", "--db", str(db))
    private, _ = new_vapid_keys()
    with push_standin() as standin:
        sub = standin.subscribe("alice-phone")
        store = open_store(str(db))
        try:
            with store.transaction() as tx:
                tx.put_push_subscription(
                    PushSubscription(
                        str(sub["endpoint"]), "acme", "alice", ("refund_approver",),
                        sub["keys"]["p256dh"], sub["keys"]["auth"], 0,
                    )
                )  # fmt: skip
        finally:
            store.close()
        config = tmp_path / "channels.toml"
        config.write_text(
            "interval_seconds = 0.2\n[webpush]\nvapid_private_key_env = 'VAPID_KEY'\n"
            "vapid_subject = 'mailto:ops@signoff.example'\n"
        )
        env = clean_env(SIGNOFF_CHANNELS_CONFIG=str(config), VAPID_KEY=private)
        with serving(["--demo", "--db", str(db)], env=env) as base_url:
            agent_jwt = _signoff(
                "dev-token", "--demo", "--sub", "u_42", "--tenant", "acme", "--act", "agent:bot"
            )
            with SignoffClient(base_url, agent_jwt) as agent:
                proposal = agent.propose("refund_order", REFUND)
            deadline = time.monotonic() + 30
            while not standin.received and time.monotonic() < deadline:
                time.sleep(0.05)
    assert standin.refused == []
    [got] = standin.received
    assert got.payload["title"] == "Refund ¥199.00 on order ord_1001"
    assert got.payload["url"].endswith(f"/ui/proposals/{proposal.proposal_id}")
