"""``SIGNOFF_CHANNELS_CONFIG``: the chat and push channels ``signoff serve`` runs, from TOML.

Secrets are best named by environment variable (``*_env``); nothing here is
ever logged. See docs/INTEGRATIONS.md for every setting.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from signoff.exceptions import ConfigurationError

CONFIG_ENV = "SIGNOFF_CHANNELS_CONFIG"
SLACK_API = "https://slack.com/api/"


class ChannelsConfigError(ConfigurationError, ValueError):
    """The channels configuration cannot be used; the message says what to fix."""

    code = "invalid_channels_config"


def _zone(name: str | None) -> str | None:
    from signoff._i18n import zone

    if name is not None and zone(name) is None:
        raise ValueError(f"{name!r} is not an IANA time zone (e.g. Asia/Shanghai)")
    return name


TimeZone = Annotated[str | None, AfterValidator(_zone)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def secret_of(name: str, value: str | None, env_name: str | None, env: Mapping[str, str]) -> str:
    found = env.get(env_name) if env_name is not None else value
    if not found:
        raise ChannelsConfigError(f"{name}: set it in the file or name an environment variable")
    return found


class SlackWorkspace(_Strict):
    team_id: str = Field(min_length=1, max_length=64)
    tenant: str = Field(min_length=1, max_length=255)
    bot_token: str | None = Field(None, repr=False)
    bot_token_env: str | None = None
    time_zone: TimeZone = None
    """The IANA zone the workspace's messages give times in (with the offset); UTC if unset."""


class SlackConversation(_Strict):
    """A channel where every proposal needing ``role`` in ``tenant`` is posted as well."""

    team_id: str
    tenant: str
    role: str
    channel: str


class SlackConfig(_Strict):
    signing_secret: str | None = Field(None, repr=False)
    signing_secret_env: str | None = None
    api_url: str = SLACK_API
    """The Web API's base URL; a local stand-in in tests."""
    workspaces: list[SlackWorkspace] = Field(min_length=1)
    conversations: list[SlackConversation] = []
    direct_messages: bool = True
    """Message each linked person who may decide, in a direct message."""
    max_attempts: int = Field(8, ge=1, le=100)
    link_days: float = Field(30, gt=0, le=366)

    def secret(self, env: Mapping[str, str]) -> str:
        return secret_of("slack.signing_secret", self.signing_secret, self.signing_secret_env, env)

    def tokens(self, env: Mapping[str, str]) -> dict[str, str]:
        return {
            w.team_id: secret_of(
                f"slack bot_token of {w.team_id}", w.bot_token, w.bot_token_env, env
            )
            for w in self.workspaces
        }

    def tenants(self) -> dict[str, str]:
        return {w.team_id: w.tenant for w in self.workspaces}


BOT_FRAMEWORK = "https://api.botframework.com"


class TeamsTenant(_Strict):
    """A Microsoft Entra tenant whose Teams users decide in one signoff tenant."""

    aad_tenant_id: str = Field(min_length=1, max_length=64)
    tenant: str = Field(min_length=1, max_length=255)
    time_zone: TimeZone = None


class TeamsConversation(_Strict):
    """A Teams channel (or group chat) where every proposal needing ``role`` is posted."""

    aad_tenant_id: str
    tenant: str
    role: str
    service_url: str
    conversation_id: str


class TeamsConfig(_Strict):
    app_id: str = Field(min_length=1, description="The bot's Microsoft App ID.")
    app_password: str | None = Field(None, repr=False)
    app_password_env: str | None = None
    app_tenant_id: str | None = None
    """The app's own Entra tenant, for a single-tenant bot registration."""
    credentials_factory: str | None = None
    """``module:factory`` of a botframework ``ServiceClientCredentialsFactory`` (a certificate
    or managed identity) instead of the app password."""
    openid_metadata_url: str = "https://login.botframework.com/v1/.well-known/openidconfiguration"
    """Where the Bot Connector's signing keys are published; a local stand-in in tests."""
    token_issuer: str = BOT_FRAMEWORK
    login_url: str = "https://login.microsoftonline.com/botframework.com"
    oauth_scope: str = BOT_FRAMEWORK
    oauth_url: str = "https://api.botframework.com"
    tenants: list[TeamsTenant] = Field(min_length=1)
    conversations: list[TeamsConversation] = []
    direct_messages: bool = True
    max_attempts: int = Field(8, ge=1, le=100)

    def password(self, env: Mapping[str, str]) -> str | None:
        if self.credentials_factory is not None and not (
            self.app_password or self.app_password_env
        ):
            return None
        return secret_of("teams.app_password", self.app_password, self.app_password_env, env)

    def tenant_map(self) -> dict[str, str]:
        return {t.aad_tenant_id: t.tenant for t in self.tenants}


class WebPushConfig(_Strict):
    """Web Push (VAPID) to the page installed as an app on a person's phone."""

    vapid_private_key: str | None = Field(None, repr=False)
    vapid_private_key_env: str | None = None
    """The VAPID key (PEM, or base64url DER as `signoff channels vapid-keys` prints)."""
    vapid_subject: str = Field(pattern=r"^(mailto:|https://)")
    """Who runs this server, for the push service (``mailto:ops@example.com``)."""
    ttl_seconds: int = Field(900, ge=0, le=86400)
    max_attempts: int = Field(5, ge=1, le=100)

    def private_key(self, env: Mapping[str, str]) -> str:
        return secret_of(
            "webpush.vapid_private_key", self.vapid_private_key, self.vapid_private_key_env, env
        )


class ChannelsConfig(_Strict):
    interval_seconds: float = Field(1.0, gt=0, le=3600)
    """How often the channels' notifier looks for new events to post or update."""
    slack: SlackConfig | None = None
    teams: TeamsConfig | None = None
    webpush: WebPushConfig | None = None


def load_channels_config(path: str | Path) -> ChannelsConfig:
    try:
        with open(path, "rb") as file:
            return ChannelsConfig.model_validate(tomllib.load(file))
    except OSError as exc:
        raise ChannelsConfigError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ChannelsConfigError(f"{path} is not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise ChannelsConfigError(f"{path}: {problems}") from exc


def config_from_environment(env: Mapping[str, str] | None = None) -> ChannelsConfig | None:
    env = os.environ if env is None else env
    path = env.get(CONFIG_ENV)
    return None if not path else load_channels_config(path)
