"""`signoff tools` prints what a model sees; `signoff mcp` refuses to start without an identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff.cli._main import cli

NAMES = [
    "request_refund_order_confirmation",
    "execute_confirmed_refund_order",
    "request_add_order_note_confirmation",
    "execute_confirmed_add_order_note",
    "request_suspend_account_confirmation",
    "execute_confirmed_suspend_account",
    "get_proposal_status",
    "get_mandate_status",
]


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    for name in ("SIGNOFF_CATALOG", "SIGNOFF_TOKEN_KEY", "SIGNOFF_DEMO", "SIGNOFF_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return CliRunner()


def test_tools_openai_prints_strict_function_definitions(runner: CliRunner) -> None:
    """--format openai: Chat Completions tools, strict, in catalog order."""
    result = runner.invoke(cli, ["tools", "--demo", "--format", "openai"])
    assert result.exit_code == 0, result.output
    tools = json.loads(result.output)
    assert [t["function"]["name"] for t in tools] == NAMES
    assert all(t["function"]["strict"] is True for t in tools)


def test_tools_openai_responses_prints_flat_definitions(runner: CliRunner) -> None:
    """--format openai-responses: the Responses API shape."""
    result = runner.invoke(cli, ["tools", "--demo", "--format", "openai-responses"])
    assert [t["name"] for t in json.loads(result.output)] == NAMES


def test_tools_mcp_prints_the_tools_list(runner: CliRunner, tmp_path: Path) -> None:
    """--format mcp: tools with inputSchema, outputSchema and annotations; no files left behind."""
    result = runner.invoke(cli, ["tools", "--demo", "--format", "mcp"])
    assert result.exit_code == 0, result.output
    tools = json.loads(result.output)["tools"]
    assert [t["name"] for t in tools] == NAMES
    assert {"inputSchema", "outputSchema", "annotations"} <= set(tools[0])
    assert tools[1]["annotations"]["readOnlyHint"] is False
    assert list(tmp_path.iterdir()) == []


def test_tools_without_a_catalog_is_a_clear_error(runner: CliRunner) -> None:
    """Outside --demo a catalog must be configured; the message says how."""
    result = runner.invoke(cli, ["tools"])
    assert result.exit_code == 2
    assert "SIGNOFF_CATALOG" in result.output


def test_mcp_needs_a_principal_outside_the_demo(runner: CliRunner) -> None:
    """No --principal and no --demo: a usage error before anything starts."""
    result = runner.invoke(cli, ["mcp", "--db", "x.db"])
    assert result.exit_code == 2
    assert "--principal" in result.output


@pytest.mark.parametrize("principal", ["u_42", "@acme", "u_42@"])
def test_mcp_refuses_a_malformed_principal(runner: CliRunner, principal: str) -> None:
    """SUB@TENANT, both parts present."""
    result = runner.invoke(cli, ["mcp", "--demo", "--principal", principal])
    assert result.exit_code == 2
    assert "SUB@TENANT" in result.output


def test_mcp_outside_the_demo_needs_a_token_key(runner: CliRunner) -> None:
    """Production settings are checked: no token key, no server."""
    result = runner.invoke(cli, ["mcp", "--db", "x.db", "--principal", "u_42@acme"])
    assert result.exit_code == 2
    assert "SIGNOFF_TOKEN_KEY" in result.output
