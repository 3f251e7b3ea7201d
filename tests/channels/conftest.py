"""Slack in-process: the app with the pages and the channels, a stand-in Slack Web API, and
requests signed with slack_sdk's own signer."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode

import httpx2 as httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from slack_sdk.signature import SignatureVerifier

from signoff import ApprovalPolicy, Catalog, Principal, Proposal
from signoff.channels import Channels, ChannelsConfig, install_channels
from signoff.demo import RefundOrder
from signoff.http import DemoObjects, Settings, create_app
from signoff.http._state import state_of
from signoff.web import include_ui
from tests.channels.standin import SlackStandIn, slack_standin
from tests.conftest import AGENT, APPROVER, APPROVER_2, REFUND, World

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
TEAM = "T0SIGNOFF"
BOT = "xoxb-test-bot-token"
SETTINGS = Settings(demo=True, public_url="https://signoff.example")


class RetypedRefund(RefundOrder):
    """The demo refund, but its approver re-types the amount (medium risk, no passkey)."""

    name = "refund_order_retyped"

    def policy(self, args: Any, state: Any, risk: Any) -> ApprovalPolicy:
        return ApprovalPolicy(role="refund_approver", retype=("amount_minor",))


def slack_config(api_url: str, **slack: Any) -> ChannelsConfig:
    return ChannelsConfig.model_validate(
        {
            "slack": {
                "signing_secret_env": "TEST_SLACK_SECRET",
                "api_url": api_url,
                "workspaces": [{"team_id": TEAM, "tenant": "acme", "bot_token_env": "TEST_BOT"}],
                **slack,
            }
        }
    )


def signed(
    payload: dict[str, Any], *, at: float, secret: str = SECRET
) -> tuple[bytes, dict[str, str]]:
    """An interactivity request as Slack sends it (``payload=`` form), signed by slack_sdk."""
    body = urlencode({"payload": json.dumps(payload)}).encode()
    timestamp = str(int(at))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    assert signature is not None
    return body, {
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": timestamp,
        "x-slack-signature": signature,
    }


def button(action: str, value: str, *, user: str, channel: str) -> dict[str, Any]:
    return {
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "signoff-test"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token-unused",
        "trigger_id": f"trigger-{user}-{action}",
        "container": {"type": "message", "channel_id": channel, "message_ts": "1.000100"},
        "channel": {"id": channel, "name": "directmessage"},
        "response_url": "https://hooks.slack.invalid/actions/unused",
        "actions": [
            {
                "type": "button",
                "action_id": action,
                "block_id": "decide",
                "value": value,
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def submission(
    callback: str, metadata: str, values: dict[str, Any], *, user: str
) -> dict[str, Any]:
    return {
        "type": "view_submission",
        "team": {"id": TEAM, "domain": "signoff-test"},
        "user": {"id": user, "username": user.lower(), "team_id": TEAM},
        "api_app_id": "A0SIGNOFF",
        "token": "legacy-verification-token-unused",
        "trigger_id": f"trigger-{user}-submit",
        "view": {
            "id": "V0MODAL",
            "type": "modal",
            "callback_id": callback,
            "private_metadata": metadata,
            "state": {"values": values},
        },
    }


@dataclass
class SlackWorld:
    app: FastAPI
    client: TestClient
    world: World
    channels: Channels
    standin: SlackStandIn

    def post(self, payload: dict[str, Any], *, age: timedelta = timedelta(0)) -> httpx.Response:
        at = (self.world.clock.now() - age).timestamp()
        body, headers = signed(payload, at=at)
        return self.client.post("/slack/events", content=body, headers=headers)

    def link(self, user: str, person: Principal) -> None:
        self.channels.links.link("slack", TEAM, user, person, by="olga")

    def notify(self) -> int:
        return self.channels.notifier.run_once()

    def propose(self, tool: str = "refund_order", **changes: Any) -> Proposal:
        return self.world.gate.propose(
            AGENT, tool, {**REFUND, **changes}, rationale="Customer says *the parcel* was <empty>"
        )

    def click(
        self, action: str, proposal: Proposal, *, user: str, version: int | None = None
    ) -> httpx.Response:
        value = json.dumps(
            {"p": proposal.proposal_id, "v": proposal.version if version is None else version}
        )
        return self.post(button(action, value, user=user, channel=f"D{user}"))

    def message_to(self, user: str) -> dict[str, Any]:
        found = [m for (channel, _), m in self.standin.messages.items() if channel == f"D{user}"]
        assert len(found) == 1, found
        return found[0]


def blocks_text(message: dict[str, Any]) -> str:
    """Every text a person reads in the message's blocks, one per line."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("text"), str):
                found.append(node["text"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message["blocks"])
    return "\n".join(found)


def action_ids(message: dict[str, Any]) -> list[str]:
    return [
        e.get("action_id", "")
        for b in message["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
    ]


@pytest.fixture
def slack(world: World) -> Iterator[SlackWorld]:
    catalog = Catalog([*world.gate.catalog, RetypedRefund(world.shop, world.provider)])
    from signoff import Gate

    gate = Gate(
        catalog, world.store, token_key=b"k" * 32, clock=world.clock, directory=world.directory
    )
    world.gate = gate
    with slack_standin() as standin:
        app = create_app(
            SETTINGS, gate=gate, demo=DemoObjects(world.shop, world.provider), extras=[include_ui]
        )
        channels = install_channels(
            app,
            state_of(app),
            slack_config(standin.url),
            env={"TEST_SLACK_SECRET": SECRET, "TEST_BOT": BOT},
            run_notifier=False,
        )
        client = TestClient(app, base_url="https://signoff.example")
        sw = SlackWorld(app, client, world, channels, standin)
        sw.notify()  # a new destination starts at the chain's head
        yield sw


__all__ = ["APPROVER", "APPROVER_2"]
