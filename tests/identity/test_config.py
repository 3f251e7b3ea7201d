"""Issuer configuration: TOML tables, the JSON env form, and refusals at start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from signoff.exceptions import InvalidIssuer
from signoff.http import Settings, SettingsError, load_settings
from signoff.identity import Authenticator

KEY_HEX = "11" * 32

TOML = """
[signoff]
token_key = "KEY"
catalog = "x:y"

[[signoff.issuers]]
issuer = "https://login.example.com/realms/acme"
audience = "signoff"

[signoff.issuers.claims]
tenant = "acme"
roles_claim = "realm_access.roles"

[[signoff.issuers]]
issuer = "https://corp.okta.example/oauth2/default"
audience = "api://signoff"
jwks_url = "https://corp.okta.example/oauth2/default/v1/keys"
tenants = ["acme", "globex"]

[signoff.issuers.claims]
tenant_claim = "tenant"
roles_claim = "groups"
""".replace("KEY", KEY_HEX)


def test_issuers_from_toml_tables(tmp_path: Path) -> None:
    """[[signoff.issuers]] tables with their claim mappings; no jwt_issuer needed."""
    path = tmp_path / "signoff.toml"
    path.write_text(TOML)
    settings = load_settings(config=path).check()
    keycloak, okta = settings.identity_config().issuers
    assert keycloak.uses_discovery and keycloak.claims.tenant == "acme"
    assert not okta.uses_discovery and okta.claims.roles_claim == "groups"
    auth = Authenticator.from_settings(settings)
    assert [i.issuer for i in auth.issuers] == [keycloak.issuer, okta.issuer]
    assert auth.remote


def test_issuers_from_the_environment_as_json() -> None:
    """SIGNOFF_ISSUERS holds the same tables as a JSON array."""
    env = {
        "SIGNOFF_ISSUERS": json.dumps(
            [{"issuer": "https://idp.example", "audience": "signoff", "claims": {"tenant": "t"}}]
        )
    }
    (issuer,) = load_settings(env=env).issuers
    assert issuer.claims.tenant == "t" and issuer.uses_discovery


@pytest.mark.parametrize(
    ("issuers", "message"),
    [
        ("[{", "JSON"),
        ('[{"issuer": "https://i", "audience": "a", "color": 1}]', "color"),
        ('[{"issuer": "i", "audience": "a"}]', "no key source"),
        ('[{"issuer": "https://i", "audience": "a", "jwks_url": "file:///etc/passwd"}]', "http"),
        (
            '[{"issuer": "https://i", "audience": "a", "jwks_url": "https://i/k", '
            '"jwks_file": "/k.json"}]',
            "not several",
        ),
        (
            '[{"issuer": "https://i", "audience": "a", "claims": {"agent_clients": ["page"]}}]',
            "page",
        ),
    ],
)
def test_bad_issuer_settings_stop_the_start(issuers: str, message: str) -> None:
    """Each bad table is a SettingsError naming what is wrong."""
    with pytest.raises(SettingsError, match=message):
        load_settings(env={"SIGNOFF_ISSUERS": issuers})


def test_the_same_issuer_twice_is_refused() -> None:
    """Two tables for one iss would make the choice of mapping ambiguous."""
    entry = {"issuer": "https://i", "audience": "a"}
    settings = load_settings(env={"SIGNOFF_ISSUERS": json.dumps([entry, entry])})
    with pytest.raises(InvalidIssuer, match="once"):
        settings.identity_config()


def test_demo_issuer_and_configured_issuers_together() -> None:
    """--demo keeps its development issuer beside the configured ones."""
    entry = {"issuer": "https://i", "audience": "a"}
    issuers = load_settings(env={"SIGNOFF_ISSUERS": json.dumps([entry])}).issuers
    settings = Settings(demo=True, issuers=issuers)
    assert [i.issuer for i in settings.identity_config().issuers] == ["signoff-demo", "https://i"]
