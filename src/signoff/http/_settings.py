"""Server settings: command-line flags > ``SIGNOFF_*`` environment > a TOML file.

Every value is checked when loaded; a bad value is a :class:`SettingsError`,
never a silent default. Secrets (the token key, the HS256 secret) are held as
bytes and never printed.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ENV_PREFIX = "SIGNOFF_"
MIN_KEY_BYTES = 32
ENVIRONMENTS = ("production", "development")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")
# Public, fixed development keys: anyone can mint tokens with them, so they are
# used only with --demo, which refuses to pretend it is a production server.
DEMO_JWT_SECRET = hashlib.sha256(b"signoff demo: development JWT secret, never production").digest()
DEMO_TOKEN_KEY = hashlib.sha256(b"signoff demo: development token key, never production").digest()
DEMO_ISSUER = "signoff-demo"


class SettingsError(ValueError):
    """The configuration is incomplete or contradictory; the server does not start."""


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A JWT verification key from a PEM file, and the one algorithm it may verify."""

    path: Path
    algorithm: str
    kid: str | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str = "signoff.db"
    host: str = "127.0.0.1"
    port: int = 8000
    workers: int = 1
    demo: bool = False
    environment: str = "production"
    token_key: bytes | None = field(default=None, repr=False)
    audience: str = "signoff"
    """The executor audience of confirmation tokens (not the JWT audience)."""
    catalog: str | None = None
    """``package.module:factory`` returning a :class:`signoff.Catalog` (production)."""
    jwt_issuer: str | None = None
    jwt_audience: str = "signoff"
    jwt_hs256_secret: bytes | None = field(default=None, repr=False)
    jwt_public_keys: tuple[PublicKey, ...] = ()
    jwt_jwks_file: Path | None = None
    jwt_leeway_seconds: int = 30
    max_body_bytes: int = 64 * 1024
    log_level: str = "info"
    public_url: str | None = None
    """Where people reach this server (links to the confirmation page), e.g. behind a proxy."""
    reconcile_interval_seconds: int = 10
    """How often each worker looks for stuck executions (0: run `signoff reconcile` instead)."""
    reconcile_older_than_seconds: int = 60

    @property
    def development(self) -> bool:
        """Demo or development mode: the only modes where ``dev-token`` may mint tokens."""
        return self.demo or self.environment == "development"

    def effective_token_key(self) -> bytes:
        """The confirmation-token key; stable across restarts and workers, or no start."""
        if self.token_key is not None:
            return self.token_key
        if self.demo:
            return DEMO_TOKEN_KEY
        raise SettingsError(
            "SIGNOFF_TOKEN_KEY (base64 or hex, at least 32 bytes) is required outside --demo"
        )

    def effective_issuer(self) -> str:
        if self.jwt_issuer is not None:
            return self.jwt_issuer
        if self.demo:
            return DEMO_ISSUER
        raise SettingsError("SIGNOFF_JWT_ISSUER is required outside --demo")

    def effective_hs256_secret(self) -> bytes | None:
        if self.jwt_hs256_secret is not None:
            return self.jwt_hs256_secret
        return DEMO_JWT_SECRET if self.demo else None

    def check(self) -> Settings:
        """Refuse to start with settings that cannot serve safely; return self."""
        self.effective_token_key()
        self.effective_issuer()
        has_key = (
            self.effective_hs256_secret() is not None
            or self.jwt_public_keys
            or self.jwt_jwks_file is not None
        )
        if not has_key:
            raise SettingsError(
                "no JWT verification key: set SIGNOFF_JWT_PUBLIC_KEYS, SIGNOFF_JWT_JWKS_FILE "
                "or (development) SIGNOFF_JWT_HS256_SECRET"
            )
        if not self.demo and self.catalog is None:
            raise SettingsError("SIGNOFF_CATALOG (module:factory) is required outside --demo")
        return self


_FIELDS: dict[str, str] = {
    "database_url": "str",
    "host": "str",
    "port": "port",
    "workers": "positive",
    "demo": "bool",
    "environment": "environment",
    "token_key": "key",
    "audience": "str",
    "catalog": "str",
    "jwt_issuer": "str",
    "jwt_audience": "str",
    "jwt_hs256_secret": "key",
    "jwt_public_keys": "public_keys",
    "jwt_jwks_file": "path",
    "jwt_leeway_seconds": "non_negative",
    "max_body_bytes": "positive",
    "log_level": "log_level",
    "public_url": "url",
    "reconcile_interval_seconds": "non_negative",
    "reconcile_older_than_seconds": "non_negative",
}
_ALIASES = {"db": "database_url", "database": "database_url"}


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config: str | Path | None = None,
) -> Settings:
    """Merge the three sources; ``None`` flags count as not given."""
    merged: dict[str, Any] = {}
    if config is not None:
        merged.update(_from_toml(Path(config)))
    merged.update(_from_env(env or {}))
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    values = {name: _convert(name, _FIELDS[name], value) for name, value in merged.items()}
    return Settings(**values)


def _from_toml(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the config file {path}: {exc}") from exc
    table = document.get("signoff", document)
    if not isinstance(table, dict):
        raise SettingsError("the [signoff] table of the config file must be a table")
    return {_known(key, f"{path}"): value for key, value in table.items()}


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in _FIELDS:
        raw = env.get(ENV_PREFIX + name.upper())
        if raw is not None:
            values[name] = raw
    return values


def _known(key: str, where: str) -> str:
    name = _ALIASES.get(key, key)
    if name not in _FIELDS:
        raise SettingsError(f"unknown setting {key!r} in {where}")
    return name


def _convert(name: str, kind: str, value: Any) -> Any:
    try:
        return _CONVERTERS[kind](value)
    except (TypeError, ValueError) as exc:
        raise SettingsError(f"setting {name}: {exc}") from exc


def _str(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("a non-empty string is required")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("an integer is required")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"[0-9]{1,9}", value.strip()):
        return int(value)
    raise ValueError(f"an integer is required, got {value!r}")


def _port(value: Any) -> int:
    port = _int(value)
    if not 0 <= port <= 65535:
        raise ValueError("a port is 0..65535")
    return port


def _positive(value: Any) -> int:
    number = _int(value)
    if number < 1:
        raise ValueError("must be at least 1")
    return number


def _non_negative(value: Any) -> int:
    number = _int(value)
    if number < 0:
        raise ValueError("must not be negative")
    return number


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"a boolean is required, got {value!r}")


def _environment(value: Any) -> str:
    text = _str(value).lower()
    if text not in ENVIRONMENTS:
        raise ValueError(f"one of {', '.join(ENVIRONMENTS)} is required")
    return text


def _log_level(value: Any) -> str:
    text = _str(value).lower()
    if text not in ("critical", "error", "warning", "info", "debug"):
        raise ValueError("one of critical, error, warning, info, debug")
    return text


def parse_key(value: Any) -> bytes:
    """A secret of at least 32 bytes, written as hex or base64 (standard or URL-safe)."""
    if isinstance(value, bytes):
        key = value
    else:
        text = _str(value).strip()
        key = bytes.fromhex(text) if _HEX.match(text) else _b64(text)
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a key needs at least {MIN_KEY_BYTES} bytes, got {len(key)}")
    return key


def _b64(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as exc:
        raise ValueError("neither hex nor base64") from exc


def _url(value: Any) -> str:
    """An absolute http(s) URL without query or fragment; a trailing slash is dropped."""
    text = _str(value)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"an absolute http(s) URL is required, got {text!r}")
    return text.rstrip("/")


def _path(value: Any) -> Path:
    return Path(_str(value))


def _public_keys(value: Any) -> tuple[PublicKey, ...]:
    """``ALG:path[#kid],…`` in the environment, or a list of tables in TOML."""
    if isinstance(value, tuple) and all(isinstance(k, PublicKey) for k in value):
        return value
    entries: list[Any] = value.split(",") if isinstance(value, str) else list(value)
    keys = []
    for entry in entries:
        if isinstance(entry, str):
            algorithm, sep, rest = entry.strip().partition(":")
            path, _, kid = rest.partition("#")
            if not sep or not path:
                raise ValueError(f"expected ALG:path[#kid], got {entry!r}")
            keys.append(PublicKey(Path(path), _public_alg(algorithm), kid or None))
        elif isinstance(entry, dict):
            keys.append(
                PublicKey(
                    Path(_str(entry.get("path"))),
                    _public_alg(entry.get("algorithm")),
                    entry.get("kid"),
                )
            )
        else:
            raise ValueError(f"a public key entry is ALG:path or a table, got {entry!r}")
    return tuple(keys)


PUBLIC_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")


def _public_alg(value: Any) -> str:
    if value not in PUBLIC_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(PUBLIC_ALGORITHMS)}, got {value!r}")
    return str(value)


_CONVERTERS: dict[str, Any] = {
    "str": _str,
    "port": _port,
    "positive": _positive,
    "non_negative": _non_negative,
    "bool": _bool,
    "environment": _environment,
    "key": parse_key,
    "public_keys": _public_keys,
    "path": _path,
    "url": _url,
    "log_level": _log_level,
}
