"""Access tokens of a real OpenID provider, used unchanged against the API.

The provider (oidc-provider) issues JWT access tokens for signoff's audience;
signoff finds its keys through OIDC discovery and the JWKS URL it names.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from fastapi.testclient import TestClient

from signoff import ManualClock
from signoff.exceptions import NotAuthenticated
from signoff.http import Settings, create_app
from signoff.identity import Authenticator, IssuerConfig
from tests.conftest import REFUND, World
from tests.identity.idp import Idp, SigningKey


def issuer_config(idp: Idp, **changes: Any) -> IssuerConfig:
    return IssuerConfig.model_validate(
        {
            "issuer": idp.issuer,
            "audience": "signoff",
            "jwks_refresh_cooldown_seconds": 0,
            "claims": {"agent_clients": ["support-bot"]},
            **changes,
        }
    )


def api(world: World, idp: Idp, *, clock: ManualClock | None = None) -> TestClient:
    settings = Settings(demo=True, issuers=(issuer_config(idp),))
    authenticator = Authenticator.from_settings(settings, clock=clock)
    app = create_app(settings, gate=world.gate, authenticator=authenticator, extras=[])
    return TestClient(app)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def propose(client: TestClient, token: str) -> Any:
    body = {"tool": "refund_order", "arguments": REFUND}
    return client.post("/v1/proposals", json=body, headers={**bearer(token)})


def test_an_agent_client_proposes_for_the_person_who_signed_in_to_it(
    world: World, idp: Idp
) -> None:
    """u_42 signs in to the agent client; its access token proposes u_42's refund."""
    client = api(world, idp)
    response = propose(client, idp.person_token("support-bot", "u_42"))
    assert response.status_code == 201, response.text
    read = client.get(
        f"/v1/proposals/{response.json()['proposal_id']}",
        headers=bearer(idp.person_token("support-bot", "u_42")),
    )
    assert read.status_code == 200, read.text
    requester = read.json()["requester"]
    assert requester["subject"] == "u_42" and requester["actor"] == "support-bot"


def refusal(response: Any) -> dict[str, Any]:
    assert response.status_code == 401, response.text
    body: dict[str, Any] = response.json()
    assert body["code"] == "not_authenticated"
    return body


def test_a_token_for_another_audience_is_refused(world: World, idp: Idp) -> None:
    """A token the provider issued for another resource server is not signoff's."""
    token = idp.client_credentials("support-bot", resource="https://elsewhere.example/other")
    assert refusal(propose(api(world, idp), token))["reason"] == "audience"


def test_a_token_of_an_untrusted_issuer_is_refused(world: World, idp: Idp, tmp_path: Path) -> None:
    """A second, unconfigured provider's token is refused, though it is well formed."""
    stranger = Idp(tmp_path).start([SigningKey("s1")])
    try:
        token = stranger.client_credentials("support-bot")
    finally:
        stranger.stop()
    assert refusal(propose(api(world, idp), token))["reason"] == "issuer"


def test_an_expired_token_is_refused(world: World, idp: Idp) -> None:
    """On the server clock, past exp (and the leeway) the token is refused."""
    token = idp.client_credentials("support-bot")
    later = ManualClock(datetime.now(UTC) + timedelta(seconds=idp.ttl_seconds + 31))
    assert refusal(propose(api(world, idp, clock=later), token))["reason"] == "expired"


def test_a_token_without_the_tenant_claim_is_a_clear_401(world: World, idp: Idp) -> None:
    """The refusal names the missing claim the issuer's mapping expects."""
    body = refusal(propose(api(world, idp), idp.client_credentials("no-tenant-bot")))
    assert body["reason"] == "missing_claim" and "'tenant'" in body["detail"]


def test_keys_rotated_at_the_provider_are_picked_up(world: World, idp: Idp) -> None:
    """After the provider signs with a new key, signoff refetches the JWKS and accepts it."""
    client = api(world, idp)
    created = propose(client, idp.person_token("support-bot", "u_42"))
    assert created.status_code == 201, created.text
    idp.restart([SigningKey("k2"), SigningKey("k1-retired")])
    token = idp.person_token("support-bot", "u_42")
    assert jwt.get_unverified_header(token)["kid"] == "k2"
    read = client.get(f"/v1/proposals/{created.json()['proposal_id']}", headers=bearer(token))
    assert read.status_code == 200, read.text


def test_while_the_provider_is_down_tokens_are_refused_at_once(world: World, idp: Idp) -> None:
    """keys_unavailable, and no second fetch until retry_after_seconds have passed."""
    from signoff.identity import Discovery

    ticks = [100.0]
    discovery = Discovery(
        idp.issuer, timeout_seconds=5, retry_after_seconds=10, monotonic=lambda: ticks[0]
    )
    idp.stop()
    fetched: list[str] = []
    real_fetch = discovery.fetch

    def counted() -> Any:
        fetched.append("fetch")
        return real_fetch()

    discovery.fetch = counted  # type: ignore[method-assign]
    for _ in range(3):
        with pytest.raises(NotAuthenticated) as caught:
            discovery.metadata()
        assert caught.value.details["reason"] == "keys_unavailable"
    assert fetched == ["fetch"]
    idp.start([SigningKey("k1")])
    ticks[0] += 10
    assert discovery.metadata().jwks_uri.startswith(idp.issuer)
    assert fetched == ["fetch", "fetch"]
