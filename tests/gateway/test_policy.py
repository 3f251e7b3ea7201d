"""The [upstreams] part of the policy file: reads, writes, fail-closed defaults, clear errors."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from signoff import RiskLevel, SideEffect
from signoff.exceptions import InvalidGatewayPolicy
from signoff.gateway import load_gateway_policy, parse_gateway_policy
from tests.gateway.conftest import LOOKUP, POLICY


def test_listed_tools_and_the_fail_closed_default() -> None:
    """A read, a write with its rules, and an unlisted tool the upstream's approver confirms."""
    policy = parse_gateway_policy(tomllib.loads(POLICY + LOOKUP)).upstream("fs")
    assert policy.tool("read_text_file").kind == "read"
    write = policy.tool("write_file")
    assert write.kind == "write" and write.listed and write.side_effect is SideEffect.REVERSIBLE
    assert write.approver_role == "fs_approver" and write.labels["path"] == "File"
    assert write.risk_rules[0].applies({"path": "/srv/secret.txt"})
    assert write.risk_rules[0].level is RiskLevel.HIGH and write.risk_rules[0].approvals == 2
    assert write.lookup is not None and write.lookup.arguments == {"path": "path"}
    unlisted = policy.tool("move_file")
    assert unlisted.kind == "write" and not unlisted.listed
    assert unlisted.approver_role == "fs_approver"
    assert unlisted.side_effect is SideEffect.IRREVERSIBLE
    other = parse_gateway_policy({}).upstream("git")
    assert other.tool("git_commit").approver_role == "git_approver"


def test_the_policy_version_changes_with_the_section() -> None:
    """Each tool's section has its own digest: editing it is visible in new proposals."""
    one = parse_gateway_policy(tomllib.loads(POLICY)).upstream("fs").tool("write_file")
    two = parse_gateway_policy(tomllib.loads(POLICY.replace("reversible", "irreversible")))
    assert one.version != two.upstream("fs").tool("write_file").version


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        ('[upstreams.fs.tools.x]\nkind = "maybe"', 'kind = "read"'),
        ('[upstreams.fs.tools.x]\nkind = "read"\napprover_role = "r"', "unknown key"),
        ('[upstreams.fs.tools.x]\nkind = "write"\nside_effect = "some"', "side_effect"),
        ('[upstreams.fs.tools.x]\nkind = "write"\napprovals = 0', "approvals"),
        ('[upstreams.fs.tools.x]\nkind = "write"\nrisk = "extreme"', "risk"),
        ('[upstreams.fs.tools.x]\nkind = "write"\nrisk_rules = [{argument = "p"}]', "exactly one"),
        (
            '[upstreams.fs.tools.x]\nkind = "write"\n'
            'risk_rules = [{argument = "p", matches = "("}]',
            "regular expression",
        ),
        ('[upstreams.fs.tools.x]\nkind = "write"\nlookup = {arguments = {}}', "tool ="),
        (
            '[upstreams.fs.tools.x]\nkind = "write"\n'
            'lookup = {tool = "r", found_when = "text_equals"}',
            "name an argument",
        ),
        ('[upstreams.Fs]\napprover_role = "r"', "lowercase"),
        ("[upstreams.fs]\ncolour = 1", "unknown key"),
    ],
)
def test_mistakes_are_one_clear_error(toml: str, needle: str) -> None:
    """A wrong section never falls back to a default: it is refused, naming the place."""
    with pytest.raises(InvalidGatewayPolicy) as refused:
        parse_gateway_policy(tomllib.loads(toml))
    assert needle in refused.value.message


def test_the_file_other_tables_are_left_to_their_own_parser(tmp_path: Path) -> None:
    """[tools.*] or [mandates] of the same file are not this parser's; no file is fail closed."""
    file = tmp_path / "policy.toml"
    file.write_text("[tools.refund_order]\napprovals = 2\n\n" + POLICY)
    assert load_gateway_policy(file).upstream("fs").tool("write_file").listed
    assert load_gateway_policy(None).upstream("fs").tool("write_file").listed is False
    file.write_text("not = [toml")
    with pytest.raises(InvalidGatewayPolicy, match="not TOML"):
        load_gateway_policy(file)
    with pytest.raises(InvalidGatewayPolicy, match="cannot read"):
        load_gateway_policy(tmp_path / "missing.toml")
