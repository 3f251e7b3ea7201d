"""`--upstream NAME=…` and SIGNOFF_UPSTREAMS: stdio commands, HTTP URLs, credentials by name."""

from __future__ import annotations

import pytest

from signoff.exceptions import InvalidUpstream
from signoff.gateway import (
    UpstreamSpec,
    merge_upstreams,
    parse_upstream,
    parse_upstreams,
    upstreams_json,
)
from signoff.http import Settings
from signoff.http._settings import SettingsError, load_settings


def test_a_command_is_split_like_a_shell_and_a_url_is_http() -> None:
    """NAME='COMMAND …' runs over stdio; NAME=https://…/mcp is streamable HTTP."""
    fs = parse_upstream("fs=npx -y @modelcontextprotocol/server-filesystem '/srv/my files'")
    assert fs.command == ("npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/my files")
    assert fs.transport == "stdio" and fs.url is None
    gh = parse_upstream("gh=https://mcp.example.com/mcp")
    assert gh.transport == "http" and gh.url == "https://mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ("fs", "NAME=COMMAND"),
        ("Fs=npx x", "lowercase"),
        ("my_fs=npx x", "lowercase"),
        ("fs=", "empty"),
        ("fs='unclosed", "cannot split"),
        ("gh=http://mcp.example.com/mcp", "loopback"),
        ("gh=https://user:pw@mcp.example.com/mcp", "credentials"),
        ("gh=https://mcp.example.com/mcp?token=x", "credentials"),
    ],
)
def test_bad_upstreams_are_refused_with_what_to_write(value: str, needle: str) -> None:
    """Every mistake is one typed error naming the fix; nothing is guessed."""
    with pytest.raises(InvalidUpstream) as refused:
        parse_upstream(value)
    assert needle in refused.value.message


def test_the_table_form_carries_credentials_by_variable_name_only() -> None:
    """HTTP: headers and a bearer token variable; stdio: env and env_from; keys checked."""
    specs = parse_upstreams(
        '{"gh": {"url": "https://mcp.example.com/mcp", "bearer_token_env": "GH_MCP_TOKEN",'
        ' "headers": {"X-Org": "acme"}}, "fs": {"command": ["srv", "/data"],'
        ' "env_from": ["HOME"], "env": {"LANG": "C"}}}'
    )
    gh, fs = specs
    assert gh.bearer_token_env == "GH_MCP_TOKEN" and "GH_MCP_TOKEN" not in repr(gh.headers)
    assert fs.env_from == ("HOME",) and fs.env == {"LANG": "C"}
    assert parse_upstreams(upstreams_json(specs)) == specs
    with pytest.raises(InvalidUpstream, match="unknown key"):
        parse_upstreams({"fs": {"command": "x", "token": "secret"}})
    with pytest.raises(InvalidUpstream, match="stdio"):
        parse_upstreams({"fs": {"command": "x", "bearer_token_env": "T"}})
    with pytest.raises(InvalidUpstream, match="named twice"):
        parse_upstreams(["fs=a", "fs=b"])


def test_a_flag_replaces_the_transport_and_keeps_the_configured_credentials() -> None:
    """--upstream gh=URL over a configured gh keeps its bearer_token_env."""
    configured = parse_upstreams({"gh": {"url": "https://a.example/mcp", "bearer_token_env": "T"}})
    merged = merge_upstreams(configured, [parse_upstream("gh=https://b.example/mcp")])
    assert merged == (UpstreamSpec("gh", url="https://b.example/mcp", bearer_token_env="T"),)


def test_settings_read_upstreams_from_env_and_toml(tmp_path: object) -> None:
    """SIGNOFF_UPSTREAMS (JSON) and [signoff.upstreams] tables; a bad one stops the start."""
    settings = load_settings(env={"SIGNOFF_UPSTREAMS": '{"fs": "srv /data"}'})
    assert settings.upstreams == (UpstreamSpec("fs", command=("srv", "/data")),)
    assert Settings(demo=True).upstreams == ()
    with pytest.raises(SettingsError, match="SIGNOFF_UPSTREAMS"):
        load_settings(env={"SIGNOFF_UPSTREAMS": '{"Fs": "srv"}'})
    only_upstreams = load_settings(
        env={"SIGNOFF_UPSTREAMS": '{"fs": "srv"}', "SIGNOFF_TOKEN_KEY": "00" * 32}
    )
    assert not any("SIGNOFF_CATALOG" in gap for gap in only_upstreams.missing())
