"""``signoff notify --config FILE``: the destinations, from a TOML file.

Secrets may be written in the file or, better, named by environment variable
(``secret_env``, ``password_env``); nothing here is ever logged.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from signoff.notify._channel import Channel
from signoff.notify._email import AddressBook, EmailChannel, Recipients
from signoff.notify._events import ASKING
from signoff.notify._receipts import SignedReceipts, receipt_channel
from signoff.notify._recipients import DirectoryRecipients
from signoff.notify._webhook import DEFAULT_MAX_ATTEMPTS, WebhookEndpoint
from signoff.store._base import Store


class ConfigError(ValueError):
    """The notify configuration cannot be used; the message says what to fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WebhookConfig(_Strict):
    name: str = Field(min_length=1, max_length=100)
    url: str
    secret: str | None = None
    secret_env: str | None = None
    events: list[str] | None = None
    tenants: list[str] | None = None
    max_attempts: int = Field(DEFAULT_MAX_ATTEMPTS, ge=1, le=100)
    timeout_seconds: float = Field(10.0, gt=0, le=300)


class EmailConfig(_Strict):
    name: str = Field("email", min_length=1, max_length=100)
    host: str
    port: int = Field(25, ge=1, le=65535)
    sender: str
    starttls: bool = False
    username: str | None = None
    password_env: str | None = None
    events: list[str] = sorted(ASKING)
    """Awaiting, reminded, escalated and reassigned: what asks people to decide."""
    tenants: list[str] | None = None
    max_attempts: int = Field(8, ge=1, le=100)
    roles: dict[str, dict[str, list[str]]] = {}
    """tenant → role → addresses of the people holding it."""
    people: dict[str, dict[str, str]] = {}
    """tenant → subject → address (for policies where the requester confirms)."""
    locale: str = "en"
    """The messages' language: ``en`` or ``zh_CN`` (``zh-CN``)."""
    time_zone: str = "UTC"
    """The IANA zone the deadline is written in, with its offset."""
    receipts: bool = False
    """Also e-mail each finished execution's signed receipt to its approvers and requester
    (their addresses from ``people``); needs the signing keys (``SIGNOFF_SIGNING_KEYS_FILE``)."""


class NotifyConfig(_Strict):
    public_url: str = "http://127.0.0.1:8000"
    interval_seconds: float = Field(1.0, gt=0, le=3600)
    backoff_seconds: float = Field(5.0, gt=0, le=86400)
    lease_seconds: float = Field(60.0, gt=0, le=86400)
    """How long a row being sent is kept from other senders; longer than any timeout."""
    webhooks: list[WebhookConfig] = []
    email: EmailConfig | None = None

    def channels(
        self,
        env: Mapping[str, str] | None = None,
        *,
        store: Store | None = None,
        receipts: SignedReceipts | None = None,
    ) -> list[Channel]:
        """The configured channels; with ``store``, e-mail follows its role directory;
        ``receipts`` signs the receipts the e-mail channel sends when ``receipts`` is on."""
        env = os.environ if env is None else env
        channels: list[Channel] = [_webhook(w, env) for w in self.webhooks]
        if self.email is not None:
            mail = _email(self.email, env, store)
            channels.append(mail)
            if self.email.receipts:
                if receipts is None:
                    raise ConfigError(
                        f"e-mail {self.email.name}: receipts = true needs the signing keys"
                        " (SIGNOFF_SIGNING_KEYS_FILE) to sign them"
                    )
                channels.append(receipt_channel(mail, receipts))
        return channels


def load_config(path: str | Path) -> NotifyConfig:
    try:
        with open(path, "rb") as file:
            return NotifyConfig.model_validate(tomllib.load(file))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)
        )
        raise ConfigError(f"{path}: {problems}") from exc


def _webhook(config: WebhookConfig, env: Mapping[str, str]) -> WebhookEndpoint:
    secret = config.secret
    if config.secret_env is not None:
        secret = env.get(config.secret_env)
        if not secret:
            raise ConfigError(
                f"webhook {config.name}: secret_env names {config.secret_env}, which is not "
                f"set in the environment; export {config.secret_env}=whsec_…"
            )
    if not secret:
        raise ConfigError(f"webhook {config.name}: set secret or secret_env (a whsec_ secret)")
    try:
        return WebhookEndpoint(
            config.name,
            config.url,
            secret,
            events=config.events,
            tenants=config.tenants,
            max_attempts=config.max_attempts,
            timeout_seconds=config.timeout_seconds,
        )
    except Exception as exc:  # the library's secret errors, a bad url or event type
        raise ConfigError(f"webhook {config.name}: {exc}") from exc


def _email(config: EmailConfig, env: Mapping[str, str], store: Store | None) -> EmailChannel:
    password = None if config.password_env is None else env.get(config.password_env)
    book = AddressBook(config.roles, config.people)
    recipients: Recipients = book if store is None else DirectoryRecipients(store, book)
    from signoff._i18n import localizer, supported, zone

    locale = supported(config.locale)
    if locale is None or zone(config.time_zone) is None:
        raise ConfigError(
            f"e-mail {config.name}: locale is en or zh_CN and time_zone an IANA zone "
            f"(not {config.locale!r}, {config.time_zone!r})"
        )
    try:
        return EmailChannel(
            config.name,
            host=config.host,
            port=config.port,
            sender=config.sender,
            recipients=recipients,
            events=config.events,
            tenants=config.tenants,
            starttls=config.starttls,
            username=config.username,
            password=password,
            max_attempts=config.max_attempts,
            localizer=localizer(locale, config.time_zone),
        )
    except ValueError as exc:
        raise ConfigError(f"e-mail {config.name}: {exc}") from exc
