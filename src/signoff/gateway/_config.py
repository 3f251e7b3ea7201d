"""Which upstream MCP servers to connect to: ``--upstream NAME=…`` and ``SIGNOFF_UPSTREAMS``.

A value starting with ``http://`` or ``https://`` is a streamable HTTP endpoint;
anything else is a command line, split like a POSIX shell would, started over
stdio. The table form (settings) adds what the deployment gives the upstream —
never the agent's token: environment variables for a stdio server (``env``, and
``env_from``: names copied from signoff's own environment), headers and a bearer
token read from a variable (``bearer_token_env``) for an HTTP one.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from signoff.exceptions import InvalidUpstream

UPSTREAM_NAME = re.compile(r"^[a-z][a-z0-9]{0,19}$")
"""Lowercase letters and digits: ``<name>_<tool>`` then splits at its first underscore."""
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_TIMEOUT_SECONDS = 60.0
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_TABLE_KEYS = frozenset(
    {"command", "url", "env", "env_from", "cwd", "headers", "bearer_token_env", "timeout_seconds"}
)


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    """One upstream MCP server: a command started over stdio, or a streamable HTTP URL."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None
    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    env_from: tuple[str, ...] = ()
    cwd: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    bearer_token_env: str | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS

    @property
    def transport(self) -> str:
        return "http" if self.url is not None else "stdio"

    def describe(self) -> str:
        """What to show in logs and banners: the command or URL, never a credential."""
        if self.url is not None:
            parts = urlsplit(self.url)
            port = f":{parts.port}" if parts.port else ""
            return f"{parts.scheme}://{parts.hostname}{port}{parts.path}"
        return shlex.join(self.command)

    def to_dict(self) -> dict[str, Any]:
        """The table form (``SIGNOFF_UPSTREAMS``), e.g. to hand the same spec to a worker."""
        data: dict[str, Any] = {"url": self.url} if self.url else {"command": list(self.command)}
        if self.env:
            data["env"] = dict(self.env)
        if self.env_from:
            data["env_from"] = list(self.env_from)
        if self.cwd is not None:
            data["cwd"] = self.cwd
        if self.headers:
            data["headers"] = dict(self.headers)
        if self.bearer_token_env is not None:
            data["bearer_token_env"] = self.bearer_token_env
        if self.timeout_seconds != DEFAULT_TIMEOUT_SECONDS:
            data["timeout_seconds"] = self.timeout_seconds
        return data


def parse_upstream(text: str) -> UpstreamSpec:
    """``NAME=COMMAND …`` or ``NAME=https://…/mcp`` (the ``--upstream`` flag)."""
    name, sep, value = text.partition("=")
    if not sep:
        raise InvalidUpstream(
            f"--upstream wants NAME=COMMAND or NAME=URL, got {text!r} — "
            "e.g. --upstream fs='npx -y @modelcontextprotocol/server-filesystem /data'"
        )
    return _from_value(_checked_name(name.strip()), value.strip())


def parse_upstreams(value: Any) -> tuple[UpstreamSpec, ...]:
    """The ``upstreams`` setting: a JSON object (env), a table (TOML), or ``NAME=…`` strings."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise InvalidUpstream(
                f"SIGNOFF_UPSTREAMS is not JSON ({exc.msg}) — write "
                '{"fs": "npx -y @modelcontextprotocol/server-filesystem /data"}'
            ) from None
    if isinstance(value, Mapping):
        specs = [_from_entry(_checked_name(str(name)), entry) for name, entry in value.items()]
    elif isinstance(value, Sequence):
        specs = [item if isinstance(item, UpstreamSpec) else _from_item(item) for item in value]
    else:
        raise InvalidUpstream("upstreams is a table of NAME = command, URL or table")
    return _unique(specs)


def merge_upstreams(
    configured: Iterable[UpstreamSpec], given: Iterable[UpstreamSpec]
) -> tuple[UpstreamSpec, ...]:
    """``--upstream`` flags over the settings: a flag replaces the command or URL of the same
    name and keeps what the deployment configured for it (credentials, environment, timeout)."""
    merged = {spec.name: spec for spec in configured}
    for spec in given:
        base = merged.get(spec.name)
        merged[spec.name] = (
            spec if base is None else replace(base, command=spec.command, url=spec.url)
        )
        _check_transport(merged[spec.name])
    return tuple(merged.values())


def upstreams_json(specs: Iterable[UpstreamSpec]) -> str:
    return json.dumps({spec.name: spec.to_dict() for spec in specs}, separators=(",", ":"))


def _from_item(item: Any) -> UpstreamSpec:
    if not isinstance(item, str):
        raise InvalidUpstream("each upstream is NAME=COMMAND or NAME=URL")
    return parse_upstream(item)


def _from_entry(name: str, entry: Any) -> UpstreamSpec:
    if isinstance(entry, str):
        return _from_value(name, entry.strip())
    if isinstance(entry, UpstreamSpec):
        return replace(entry, name=name)
    if not isinstance(entry, Mapping):
        raise InvalidUpstream(f"upstream {name!r} is a command, a URL or a table")
    unknown = sorted(set(entry) - _TABLE_KEYS)
    if unknown:
        raise InvalidUpstream(
            f"upstream {name!r}: unknown key(s) {', '.join(unknown)} — "
            f"use {', '.join(sorted(_TABLE_KEYS))}"
        )
    command = entry.get("command")
    url = entry.get("url")
    if isinstance(command, str):
        command = _split(name, command)
    elif command is not None:
        command = _strings(name, "command", command)
    spec = UpstreamSpec(
        name=name,
        command=tuple(command or ()),
        url=url if isinstance(url, str) and url else None,
        env=_string_map(name, "env", entry.get("env")),
        env_from=tuple(_env_names(name, entry.get("env_from") or ())),
        cwd=_optional_string(name, "cwd", entry.get("cwd")),
        headers=_string_map(name, "headers", entry.get("headers")),
        bearer_token_env=_optional_env_name(name, entry.get("bearer_token_env")),
        timeout_seconds=_timeout(name, entry.get("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)),
    )
    _check_transport(spec)
    return spec


def _from_value(name: str, value: str) -> UpstreamSpec:
    if value.startswith(("http://", "https://")):
        spec = UpstreamSpec(name=name, url=value)
    else:
        spec = UpstreamSpec(name=name, command=tuple(_split(name, value)))
    _check_transport(spec)
    return spec


def _check_transport(spec: UpstreamSpec) -> None:
    name = spec.name
    if bool(spec.command) == (spec.url is not None):
        raise InvalidUpstream(f"upstream {name!r} needs exactly one of a command or a url")
    if spec.url is None:
        if spec.headers or spec.bearer_token_env:
            raise InvalidUpstream(
                f"upstream {name!r} runs over stdio: give it credentials with env or env_from"
            )
        return
    parts = urlsplit(spec.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidUpstream(f"upstream {name!r}: {spec.url!r} is not an http(s) URL")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InvalidUpstream(
            f"upstream {name!r}: the URL may not carry credentials, a query or a fragment — "
            "configure bearer_token_env or headers instead"
        )
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        raise InvalidUpstream(
            f"upstream {name!r}: plain http is only for loopback addresses; use https"
        )
    if spec.env or spec.env_from or spec.cwd:
        raise InvalidUpstream(f"upstream {name!r} is remote: env, env_from and cwd are for stdio")


def _checked_name(name: str) -> str:
    if not UPSTREAM_NAME.match(name):
        raise InvalidUpstream(
            f"upstream name {name!r} must be 1-20 lowercase letters and digits, starting with a "
            "letter (its tools are named <name>_<tool>)"
        )
    return name


def _split(name: str, command: str) -> list[str]:
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise InvalidUpstream(f"upstream {name!r}: cannot split the command: {exc}") from None
    if not argv:
        raise InvalidUpstream(f"upstream {name!r}: the command is empty")
    return argv


def _strings(name: str, key: str, value: Any) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidUpstream(f"upstream {name!r}: {key} is a string or a list of strings")
    return list(value)


def _string_map(name: str, key: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidUpstream(f"upstream {name!r}: {key} is a table of strings")
    return dict(value)


def _env_names(name: str, value: Any) -> list[str]:
    names = _strings(name, "env_from", value)
    for env_name in names:
        if not ENV_NAME.match(env_name):
            raise InvalidUpstream(f"upstream {name!r}: {env_name!r} is not a variable name")
    return names


def _optional_string(name: str, key: str, value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise InvalidUpstream(f"upstream {name!r}: {key} is a string")


def _optional_env_name(name: str, value: Any) -> str | None:
    text = _optional_string(name, "bearer_token_env", value)
    if text is not None and not ENV_NAME.match(text):
        raise InvalidUpstream(f"upstream {name!r}: bearer_token_env names a variable")
    return text


def _timeout(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise InvalidUpstream(f"upstream {name!r}: timeout_seconds is a number in (0, 3600]")
    return float(value)


def _unique(specs: list[UpstreamSpec]) -> tuple[UpstreamSpec, ...]:
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise InvalidUpstream(f"upstream {spec.name!r} is named twice")
        seen.add(spec.name)
    return tuple(specs)
