"""Settings: flags > SIGNOFF_* env > TOML; bad values refuse to start."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from signoff.exceptions import ConfigurationError
from signoff.http import Settings, SettingsError, create_app, load_settings
from signoff.http._settings import DEMO_TOKEN_KEY

KEY_HEX = "ab" * 32


def test_precedence_flags_over_env_over_toml(tmp_path: Path) -> None:
    """Each source overrides the one below it, field by field."""
    config = tmp_path / "signoff.toml"
    config.write_text(
        '[signoff]\nport = 9000\nhost = "0.0.0.0"\nworkers = 3\ndb = "from-toml.db"\n'
    )
    env = {"SIGNOFF_PORT": "9100", "SIGNOFF_WORKERS": "2"}
    settings = load_settings({"port": 9200, "host": None}, env=env, config=config)
    assert (settings.port, settings.workers, settings.host) == (9200, 2, "0.0.0.0")
    assert settings.database_url == "from-toml.db"


def test_token_key_hex_and_base64(tmp_path: Path) -> None:
    """SIGNOFF_TOKEN_KEY accepts hex and (URL-safe) base64 of at least 32 bytes."""
    raw = bytes(range(32))
    for text in (raw.hex(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        assert load_settings(env={"SIGNOFF_TOKEN_KEY": text}).token_key == raw


@pytest.mark.parametrize(
    "env",
    [
        {"SIGNOFF_TOKEN_KEY": "ab" * 16},
        {"SIGNOFF_TOKEN_KEY": "not base64 at all!"},
        {"SIGNOFF_PORT": "eighty"},
        {"SIGNOFF_PORT": "70000"},
        {"SIGNOFF_WORKERS": "0"},
        {"SIGNOFF_DEMO": "maybe"},
        {"SIGNOFF_ENVIRONMENT": "staging"},
        {"SIGNOFF_JWT_PUBLIC_KEYS": "HS256:/tmp/key.pem"},
        {"SIGNOFF_JWT_PUBLIC_KEYS": "RS256"},
    ],
)
def test_bad_values_are_settings_errors(env: dict[str, str]) -> None:
    """A bad value is refused, never replaced by a default."""
    with pytest.raises(SettingsError):
        load_settings(env=env)


def test_unknown_toml_key_is_refused(tmp_path: Path) -> None:
    """A typo in the config file is an error, not ignored."""
    config = tmp_path / "signoff.toml"
    config.write_text("[signoff]\nprot = 1\n")
    with pytest.raises(SettingsError, match="prot"):
        load_settings(config=config)


def test_public_keys_from_env_and_toml(tmp_path: Path) -> None:
    """ALG:path#kid lists in the environment, tables in TOML."""
    keys = load_settings(env={"SIGNOFF_JWT_PUBLIC_KEYS": "RS256:/k/a.pem#a,EdDSA:/k/b.pem"})
    assert [(k.algorithm, str(k.path), k.kid) for k in keys.jwt_public_keys] == [
        ("RS256", "/k/a.pem", "a"),
        ("EdDSA", "/k/b.pem", None),
    ]
    config = tmp_path / "signoff.toml"
    config.write_text('[[signoff.jwt_public_keys]]\npath = "/k/c.pem"\nalgorithm = "ES256"\n')
    assert load_settings(config=config).jwt_public_keys[0].algorithm == "ES256"


def test_production_refuses_without_token_key_issuer_key_and_catalog() -> None:
    """Outside demo, each missing essential stops the start with a clear message."""
    with pytest.raises(SettingsError, match="SIGNOFF_TOKEN_KEY"):
        Settings().check()
    with pytest.raises(SettingsError, match="SIGNOFF_JWT_ISSUER"):
        load_settings(env={"SIGNOFF_TOKEN_KEY": KEY_HEX}).check()
    with pytest.raises(SettingsError, match="verification key"):
        load_settings(env={"SIGNOFF_TOKEN_KEY": KEY_HEX, "SIGNOFF_JWT_ISSUER": "i"}).check()
    with pytest.raises(SettingsError, match="SIGNOFF_CATALOG"):
        load_settings(
            env={
                "SIGNOFF_TOKEN_KEY": KEY_HEX,
                "SIGNOFF_JWT_ISSUER": "i",
                "SIGNOFF_JWT_HS256_SECRET": KEY_HEX,
            }
        ).check()


def test_demo_keys_are_fixed_and_overridable() -> None:
    """Demo derives a fixed development token key; a configured one wins."""
    assert Settings(demo=True).effective_token_key() == DEMO_TOKEN_KEY
    assert Settings(demo=True, token_key=b"x" * 32).effective_token_key() == b"x" * 32


def build_test_catalog() -> object:
    from signoff import Catalog

    return Catalog()


def not_a_catalog() -> object:
    return 42


def test_production_app_loads_the_catalog_factory(tmp_path: Path) -> None:
    """SIGNOFF_CATALOG names module:factory; anything but a Catalog is refused."""
    env = {
        "SIGNOFF_TOKEN_KEY": KEY_HEX,
        "SIGNOFF_JWT_ISSUER": "https://idp.example",
        "SIGNOFF_JWT_HS256_SECRET": KEY_HEX,
        "SIGNOFF_DATABASE_URL": str(tmp_path / "prod.db"),
        "SIGNOFF_CATALOG": "tests.http.test_settings:build_test_catalog",
    }
    app = create_app(load_settings(env=env), extras=())
    assert app.state.signoff.demo is None
    app.state.signoff.close()
    for spec in ("tests.http.test_settings:not_a_catalog", "no.such.module:x"):
        with pytest.raises(ConfigurationError):
            create_app(load_settings(env={**env, "SIGNOFF_CATALOG": spec}), extras=())


def test_public_url_is_validated_and_used_for_confirmation_links() -> None:
    """A proxy's address becomes the base of confirmation links; junk is refused."""
    from signoff.mcp_server._http import public_url_of

    settings = load_settings({"public_url": "https://signoff.example.com/"}, env={})
    assert settings.public_url == "https://signoff.example.com"
    assert public_url_of(settings) == "https://signoff.example.com"
    assert public_url_of(load_settings({}, env={})) == "http://127.0.0.1:8000"
    for bad in ("signoff.example.com", "ftp://x", "https://x/?a=1", "https://x/#f"):
        with pytest.raises(SettingsError):
            load_settings({"public_url": bad}, env={})


def test_every_missing_setting_is_reported_in_one_run() -> None:
    """A production start without configuration names all four gaps at once, not one per restart."""
    with pytest.raises(SettingsError) as caught:
        Settings().check()
    message = str(caught.value)
    for name in ("SIGNOFF_TOKEN_KEY", "SIGNOFF_JWT_ISSUER", "verification key", "SIGNOFF_CATALOG"):
        assert name in message
    assert "\n" not in message


def test_every_invalid_value_is_reported_by_its_variable_without_the_value() -> None:
    """Three bad values give one error naming the three variables; a short secret is not echoed."""
    secret = "cd" * 16
    env = {"SIGNOFF_PORT": "70000", "SIGNOFF_WORKERS": "0", "SIGNOFF_JWT_HS256_SECRET": secret}
    with pytest.raises(SettingsError) as caught:
        load_settings(env=env)
    message = str(caught.value)
    assert all(
        n in message for n in ("SIGNOFF_PORT", "SIGNOFF_WORKERS", "SIGNOFF_JWT_HS256_SECRET")
    )
    assert secret not in message
    assert caught.value.code == "invalid_settings"


def test_secrets_are_not_in_the_settings_repr() -> None:
    """Printing or logging the settings never shows the token key or the HS256 secret."""
    settings = load_settings(
        env={"SIGNOFF_TOKEN_KEY": KEY_HEX, "SIGNOFF_JWT_HS256_SECRET": KEY_HEX}
    )
    assert settings.token_key == bytes.fromhex(KEY_HEX)
    for text in (repr(settings), str(settings)):
        assert "token_key" not in text and "hs256" not in text and "\\xab" not in text
