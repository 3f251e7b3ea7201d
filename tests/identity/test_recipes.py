"""The recipes of docs/IDENTITY.md, each applied to a token of that provider's shape.

The TOML is read from the document itself, so a recipe that stops matching
its provider's tokens fails here. Keys come from a JWKS file instead of
discovery (the provider's URL is not reachable from a test).
"""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from signoff import ManualClock, Principal
from signoff.exceptions import NotAuthenticated
from signoff.identity import Authenticator, identity_config, issuer_config

DOC = Path(__file__).parents[2] / "docs" / "IDENTITY.md"
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)


def recipes() -> dict[str, dict[str, Any]]:
    blocks = re.findall(r"```toml\n# recipe: (\w+)\n(.*?)```", DOC.read_text(), re.S)
    return {name: tomllib.loads(body)["signoff"]["issuers"][0] for name, body in blocks}


def authenticator(recipe: dict[str, Any], tmp_path: Path) -> Authenticator:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(KEY.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    table = {k: v for k, v in recipe.items() if k != "login"}
    config = issuer_config({**table, "discovery": False, "jwks_file": str(jwks)})
    return Authenticator.from_config(identity_config([config]), clock=ManualClock(NOW))


def token(claims: dict[str, Any]) -> str:
    issued = int(NOW.timestamp())
    body = {"iat": issued, "nbf": issued, "exp": issued + 3600, **claims}
    return jwt.encode(body, KEY, algorithm="RS256", headers={"kid": "k1"})


SHAPES: dict[str, tuple[dict[str, Any], Principal]] = {
    "keycloak": (
        {
            "iss": "https://sso.example.com/realms/acme",
            "aud": ["signoff", "account"],
            "sub": "f1b8c7de-8a1f-4a51-9e51-3b1f2a9c0d11",
            "typ": "Bearer",
            "azp": "support-bot",
            "realm_access": {"roles": ["refund_approver", "offline_access"]},
            "resource_access": {"account": {"roles": ["manage-account"]}},
            "scope": "openid profile email",
            "preferred_username": "u_42",
        },
        Principal(
            "f1b8c7de-8a1f-4a51-9e51-3b1f2a9c0d11",
            "acme",
            frozenset({"refund_approver", "offline_access"}),
            actor="support-bot",
            client="support-bot",
        ),
    ),
    "entra": (
        {
            "iss": "https://login.microsoftonline.com/9188040d-6c67-4c5b-b112-36a304b66dad/v2.0",
            "aud": "6e74172b-be56-4843-9ff4-e66a39bb12e3",
            "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
            "oid": "00000000-0000-0000-66f3-3332eca7ea81",
            "tid": "9188040d-6c67-4c5b-b112-36a304b66dad",
            "azp": "0f2b3c4d-5e6f-4a1b-8c9d-0e1f2a3b4c5d",
            "azpacr": "1",
            "roles": ["refund_approver"],
            "scp": "access_as_user",
            "ver": "2.0",
        },
        Principal(
            "00000000-0000-0000-66f3-3332eca7ea81",
            "9188040d-6c67-4c5b-b112-36a304b66dad",
            frozenset({"refund_approver"}),
            actor="0f2b3c4d-5e6f-4a1b-8c9d-0e1f2a3b4c5d",
            client="0f2b3c4d-5e6f-4a1b-8c9d-0e1f2a3b4c5d",
        ),
    ),
    "auth0": (
        {
            "iss": "https://acme.eu.auth0.com/",
            "aud": ["https://signoff.example.com/api", "https://acme.eu.auth0.com/userinfo"],
            "sub": "auth0|6650f2b7c1e4a90012345678",
            "azp": "Zq8p0b0WmUf0cN3sK1Jx",
            "scope": "openid profile",
            "https://signoff.example.com/tenant": "acme",
            "https://signoff.example.com/roles": ["refund_approver"],
        },
        Principal(
            "auth0|6650f2b7c1e4a90012345678",
            "acme",
            frozenset({"refund_approver"}),
            client="Zq8p0b0WmUf0cN3sK1Jx",
        ),
    ),
    "okta": (
        {
            "ver": 1,
            "iss": "https://acme.okta.com/oauth2/default",
            "aud": "api://signoff",
            "cid": "0oa1agentclient5d7",
            "uid": "00u1a2b3c4d5e6f7g8h9",
            "sub": "u_42@example.com",
            "scp": ["openid", "profile"],
            "groups": ["Everyone", "signoff-refund-approvers"],
        },
        Principal(
            "u_42@example.com",
            "acme",
            frozenset({"refund_approver"}),
            actor="0oa1agentclient5d7",
            client="0oa1agentclient5d7",
        ),
    ),
}


def test_every_provider_has_a_recipe_and_a_shape() -> None:
    """The document's recipes and this file's token shapes name the same providers."""
    assert set(recipes()) == set(SHAPES) == {"keycloak", "entra", "auth0", "okta"}


@pytest.mark.parametrize("provider", sorted(SHAPES))
def test_a_token_of_the_providers_shape_maps_as_the_recipe_says(
    provider: str, tmp_path: Path
) -> None:
    """The recipe turns that provider's token, unchanged, into the expected principal."""
    claims, expected = SHAPES[provider]
    auth = authenticator(recipes()[provider], tmp_path)
    principal = auth.authenticate(token(claims))
    assert principal == dataclasses.replace(expected, issuer=claims["iss"])


@pytest.mark.parametrize("provider", sorted(SHAPES))
def test_the_recipe_refuses_another_audience(provider: str, tmp_path: Path) -> None:
    """The same token for another API of the provider is refused."""
    claims, _ = SHAPES[provider]
    auth = authenticator(recipes()[provider], tmp_path)
    with pytest.raises(NotAuthenticated) as caught:
        auth.authenticate(token({**claims, "aud": "https://another.example/api"}))
    assert caught.value.details["reason"] == "audience"
