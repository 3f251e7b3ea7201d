"""Parsers for the setting values pydantic cannot read by itself: keys, key lists, URLs."""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from signoff.identity._config import PublicKey as PublicKey

MIN_KEY_BYTES = 32
PUBLIC_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
_HEX = re.compile(r"^(?:[0-9a-fA-F]{2})+$")


def lower(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def parse_key(value: Any) -> bytes | None:
    """A secret of at least 32 bytes, written as hex or base64 (standard or URL-safe)."""
    if value is None or isinstance(value, bytes):
        key = value
    elif isinstance(value, str) and value.strip():
        text = value.strip()
        key = bytes.fromhex(text) if _HEX.match(text) else _b64(text)
    else:
        raise ValueError("a key written as hex or base64 is required")
    if key is not None and len(key) < MIN_KEY_BYTES:
        raise ValueError(f"a key needs at least {MIN_KEY_BYTES} bytes, got {len(key)}")
    return key


def _b64(text: str) -> bytes:
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except binascii.Error as exc:
        raise ValueError("neither hex nor base64") from exc


def parse_url(value: Any) -> Any:
    """An absolute http(s) URL without query or fragment; a trailing slash is dropped."""
    if value is None:
        return None
    text = str(value)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"an absolute http(s) URL is required, got {text!r}")
    return text.rstrip("/")


def parse_public_keys(value: Any) -> tuple[PublicKey, ...]:
    """``ALG:path[#kid],…`` in the environment, or a list of tables in TOML."""
    if isinstance(value, tuple) and all(isinstance(k, PublicKey) for k in value):
        return value
    entries: list[Any] = value.split(",") if isinstance(value, str) else list(value)
    return tuple(_public_key(entry) for entry in entries)


def _public_key(entry: Any) -> PublicKey:
    if isinstance(entry, PublicKey):
        return entry
    if isinstance(entry, str):
        algorithm, sep, rest = entry.strip().partition(":")
        path, _, kid = rest.partition("#")
        if not sep or not path:
            raise ValueError(f"expected ALG:path[#kid], got {entry!r}")
        return PublicKey(Path(path), _public_alg(algorithm), kid or None)
    if isinstance(entry, dict) and isinstance(entry.get("path"), str):
        return PublicKey(Path(entry["path"]), _public_alg(entry.get("algorithm")), entry.get("kid"))
    raise ValueError(f"a public key entry is ALG:path or a table with a path, got {entry!r}")


def _public_alg(value: Any) -> str:
    if value not in PUBLIC_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(PUBLIC_ALGORITHMS)}, got {value!r}")
    return str(value)


def parse_rate(value: Any) -> str | None:
    """A `limits` rate such as ``600/minute`` or ``10 per second``; ``off``/``0``/empty: none."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "0", "off")):
        return None
    from limits import parse

    try:
        parse(str(value))
    except ValueError as exc:
        raise ValueError(f"a rate like 60/minute is required, got {value!r}") from exc
    return str(value).strip()


def parse_tool_forms(value: Any) -> tuple[tuple[str, str], ...]:
    """``tool=signed,other=opaque`` in the environment, or a table in TOML."""
    if isinstance(value, tuple):
        return value
    if isinstance(value, dict):
        return tuple((str(tool), str(form)) for tool, form in value.items())
    pairs = []
    for entry in str(value).split(","):
        tool, sep, form = entry.strip().partition("=")
        if not sep or not tool:
            raise ValueError(f"expected tool=opaque|signed, got {entry!r}")
        pairs.append((tool, form))
    return tuple(pairs)


def parse_time_zones(value: Any) -> tuple[tuple[str, str], ...]:
    """``tenant=Area/City,…`` (``*`` for every other tenant), or a TOML table of them."""
    from signoff._i18n import zone

    if value is None or value == "":
        return ()
    if isinstance(value, str):
        pairs = [item.partition("=")[::2] for item in value.split(",") if item.strip()]
    elif isinstance(value, dict):
        pairs = list(value.items())
    else:
        pairs = list(value)
    found = []
    for tenant, name in pairs:
        tenant, name = str(tenant).strip(), str(name).strip()
        if not tenant or zone(name) is None:
            raise ValueError(f"{tenant or '?'}={name or '?'}: an IANA time zone is required")
        found.append((tenant, name))
    return tuple(found)


def parse_names(value: Any) -> tuple[str, ...] | None:
    """``a,b,c`` in the environment, or a list of strings in TOML; ``""`` is the empty list."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        raise ValueError("a comma-separated list or a list of names is required")
    names = tuple(str(item).strip() for item in items if str(item).strip())
    if any(not re.fullmatch(r"[\x21-\x7e]{1,255}", name) for name in names):
        raise ValueError("names are printable ASCII without spaces")
    return names
