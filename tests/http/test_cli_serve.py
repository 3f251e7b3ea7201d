"""`signoff dev-token` and the start-up refusals of `signoff serve`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff.cli._main import cli
from signoff.http import Authenticator, Settings

SECRET_HEX = "cd" * 32


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    for name in (
        "SIGNOFF_DEMO",
        "SIGNOFF_ENVIRONMENT",
        "SIGNOFF_JWT_HS256_SECRET",
        "SIGNOFF_TOKEN_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def test_dev_token_refuses_outside_demo_or_development(runner: CliRunner) -> None:
    """Without --demo or development mode no token is printed."""
    result = runner.invoke(cli, ["dev-token", "--sub", "u_42", "--tenant", "acme"])
    assert result.exit_code == 2
    assert result.output.startswith("error [invalid_settings]: dev-token refuses")
    assert "." not in result.stdout.strip()


def test_dev_token_for_the_demo_server_verifies(runner: CliRunner) -> None:
    """--demo mints a token the demo server accepts, with roles and act."""
    result = runner.invoke(
        cli,
        [
            "dev-token",
            "--demo",
            "--sub",
            "u_42",
            "--tenant",
            "acme",
            "--role",
            "support",
            "--role",
            "x",
            "--act",
            "agent:support-bot",
            "--client",
            "jdk8-crm",
            "--ttl",
            "60",
        ],
    )
    assert result.exit_code == 0, result.output
    principal = Authenticator.from_settings(Settings(demo=True)).authenticate(result.stdout.strip())
    assert principal.subject == "u_42"
    assert principal.roles == frozenset({"support", "x"})
    assert principal.actor == "agent:support-bot"
    assert principal.client == "jdk8-crm"


def test_dev_token_in_development_mode_uses_the_configured_secret(runner: CliRunner) -> None:
    """SIGNOFF_ENVIRONMENT=development with an HS256 secret and issuer is enough."""
    env = {
        "SIGNOFF_ENVIRONMENT": "development",
        "SIGNOFF_JWT_HS256_SECRET": SECRET_HEX,
        "SIGNOFF_JWT_ISSUER": "dev-idp",
    }
    result = runner.invoke(cli, ["dev-token", "--sub", "bob", "--tenant", "t"], env=env)
    assert result.exit_code == 0, result.output
    settings = Settings(jwt_issuer="dev-idp", jwt_hs256_secret=bytes.fromhex(SECRET_HEX))
    assert Authenticator.from_settings(settings).authenticate(result.stdout.strip()).tenant == "t"


def test_dev_token_ttl_is_bounded(runner: CliRunner) -> None:
    """A zero or week-plus TTL is a usage error."""
    for ttl in ("0", "9999999"):
        result = runner.invoke(
            cli, ["dev-token", "--demo", "--sub", "a", "--tenant", "b", "--ttl", ttl]
        )
        assert result.exit_code == 2


def test_serve_refuses_without_a_token_key(runner: CliRunner) -> None:
    """Outside --demo, serve stops before binding when SIGNOFF_TOKEN_KEY is missing."""
    result = runner.invoke(cli, ["serve", "--port", "0"])
    assert result.exit_code == 2
    assert "SIGNOFF_TOKEN_KEY" in result.output


def test_serve_refuses_a_bad_config_file(runner: CliRunner) -> None:
    """A missing config file is an error, not an empty configuration."""
    result = runner.invoke(cli, ["serve", "--demo", "--config", "/nonexistent/signoff.toml"])
    assert result.exit_code == 2
    assert "config file" in result.output


def test_serve_refuses_an_unimportable_catalog(runner: CliRunner, tmp_path: Path) -> None:
    """A production start with a catalog that cannot be imported stops before binding."""
    env = {
        "SIGNOFF_TOKEN_KEY": SECRET_HEX,
        "SIGNOFF_JWT_ISSUER": "https://idp.example",
        "SIGNOFF_JWT_HS256_SECRET": SECRET_HEX,
        "SIGNOFF_CATALOG": "no.such.module:catalog",
        "SIGNOFF_DATABASE_URL": str(tmp_path / "x.db"),
    }
    result = runner.invoke(cli, ["serve", "--port", "0"], env=env)
    assert result.exit_code == 2
    assert result.output.startswith("error [invalid_reference]: SIGNOFF_CATALOG: cannot import")
    assert not (tmp_path / "x.db").exists()
