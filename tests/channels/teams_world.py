"""Teams in-process: the bot under the app, a stand-in Bot Connector (OpenID keys and REST
API) on 127.0.0.1, and activities carrying a Bot Connector JWT signed with a test key."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import jwt
from botframework.connector.auth import (
    MicrosoftAppCredentials,
    PasswordServiceClientCredentialFactory,
)
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI
from fastapi.testclient import TestClient

from signoff import Principal, Proposal
from signoff.channels import Channels, ChannelsConfig, install_channels
from signoff.http import DemoObjects, create_app
from signoff.http._state import state_of
from signoff.web import include_ui
from tests.channels.conftest import SETTINGS
from tests.channels.standin import BotStandIn, bot_standin
from tests.conftest import AGENT, REFUND, World

APP_ID = "00000000-0000-4000-8000-00000000a001"
AAD_TENANT = "aad-tenant-acme"
KID = "test-connector-key"


class _EntraStandIn(MicrosoftAppCredentials):  # type: ignore[misc]
    """Microsoft Entra ID is unreachable: the bot's outgoing token is a fixed test value."""

    def get_access_token(self, force_refresh: bool = False) -> str:
        return "entra-test-token"


class StandInCredentials(PasswordServiceClientCredentialFactory):  # type: ignore[misc]
    async def create_credentials(
        self, app_id: str, oauth_scope: str, login_endpoint: str, validate_authority: bool
    ) -> MicrosoftAppCredentials:
        return _EntraStandIn(app_id, "unused", oauth_scope=oauth_scope)


def connector_keys() -> tuple[Any, dict[str, Any]]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update(kid=KID, use="sig", endorsements=["msteams"])
    return key, {"keys": [jwk]}


def teams_config(standin: BotStandIn) -> ChannelsConfig:
    return ChannelsConfig.model_validate(
        {
            "teams": {
                "app_id": APP_ID,
                "app_password_env": "TEST_TEAMS_PASSWORD",
                "openid_metadata_url": standin.metadata_url,
                "tenants": [{"aad_tenant_id": AAD_TENANT, "tenant": "acme"}],
            }
        }
    )


def activity(kind: str, *, user: str, service_url: str, **extra: Any) -> dict[str, Any]:
    """An activity as the Bot Connector sends it from a personal chat in Teams."""
    return {
        "type": kind,
        "id": f"in-{time.monotonic_ns()}",
        "timestamp": "2026-09-01T06:20:00.000Z",
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": {"id": f"29:{user}", "name": user.title(), "aadObjectId": f"aad-{user}"},
        "conversation": {
            "id": f"a:chat-{user}",
            "conversationType": "personal",
            "tenantId": AAD_TENANT,
        },
        "recipient": {"id": f"28:{APP_ID}", "name": "signoff"},
        "channelData": {"tenant": {"id": AAD_TENANT}},
        **extra,
    }


@dataclass
class TeamsWorld:
    app: FastAPI
    client: TestClient
    world: World
    channels: Channels
    standin: BotStandIn
    key: Any

    def token(
        self,
        *,
        audience: str = APP_ID,
        service_url: str | None = None,
        key: Any = None,
        age: float = 0,
    ) -> str:
        now = time.time() - age
        claims = {
            "iss": "https://api.botframework.com",
            "aud": audience,
            "serviceurl": service_url or self.standin.service_url,
            "nbf": int(now) - 5,
            "iat": int(now) - 5,
            "exp": int(now) + 3600,
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": KID})

    def send(self, body: dict[str, Any], *, token: str | None = None) -> httpx.Response:
        headers = {} if token == "" else {"authorization": f"Bearer {token or self.token()}"}
        return self.client.post("/teams/messages", json=body, headers=headers)

    def say(self, user: str, text: str = "hi") -> httpx.Response:
        return self.send(
            activity("message", user=user, service_url=self.standin.service_url, text=text)
        )

    def click(self, verb: str, proposal: Proposal, *, user: str, **inputs: Any) -> httpx.Response:
        value = {
            "action": {
                "type": "Action.Execute",
                "verb": verb,
                "data": {"p": proposal.proposal_id, "v": proposal.version, **inputs},
            },
            "trigger": "manual",
        }
        return self.send(
            activity(
                "invoke",
                user=user,
                service_url=self.standin.service_url,
                name="adaptiveCard/action",
                value=value,
            )
        )

    def link(self, user: str, person: Principal) -> None:
        self.channels.links.link("teams", AAD_TENANT, f"aad-{user}", person, by="olga")

    def notify(self) -> int:
        return self.channels.notifier.run_once()

    def propose(self, **changes: Any) -> Proposal:
        return self.world.gate.propose(
            AGENT,
            "refund_order",
            {**REFUND, **changes},
            rationale="**Approve now** [ok](https://evil)",
        )


def card_text(card: dict[str, Any]) -> str:
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in ("text", "title"):
                if isinstance(node.get(key), str):
                    found.append(node[key])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(card)
    return "\n".join(found)


def verbs(card: dict[str, Any]) -> list[str]:
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "Action.Execute":
                out.append(str(node["verb"]))
            elif node.get("type") == "Action.OpenUrl":
                out.append("open:" + str(node["title"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(card.get("actions", []))
    return out


@contextmanager
def teams_world(world: World) -> Iterator[TeamsWorld]:
    key, jwks = connector_keys()
    with bot_standin(jwks) as standin:
        app = create_app(
            SETTINGS,
            gate=world.gate,
            demo=DemoObjects(world.shop, world.provider),
            extras=[include_ui],
        )
        channels = install_channels(
            app,
            state_of(app),
            teams_config(standin),
            env={"TEST_TEAMS_PASSWORD": "unused"},
            run_notifier=False,
            teams_credentials=StandInCredentials(APP_ID, "unused"),
        )
        tw = TeamsWorld(
            app, TestClient(app, base_url="https://signoff.example"), world, channels, standin, key
        )
        tw.notify()
        yield tw


def stand_in_credentials() -> StandInCredentials:
    """``teams.credentials_factory`` for a real server under test (Entra ID is unreachable)."""
    return StandInCredentials(APP_ID, "unused")
