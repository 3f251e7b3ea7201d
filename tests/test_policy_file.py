"""Policies as data: the file overrides each tool's Python policy, per tool, tenant, risk level
and Cedar condition; its effective form's digest is the policy_version tokens bind."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from signoff import ApprovalPolicy, Decision, DecisionKind, Gate, Principal, ProposalStatus
from signoff.cli._main import cli
from signoff.exceptions import PolicyFileError, PolicyUndecidable
from signoff.policy import (
    PolicySource,
    Problem,
    check_policy,
    parse_policy,
    policy_version,
)
from signoff.policy._fields import approval_fields
from signoff.policy._file import parse_with_problems
from tests.conftest import AGENT, APPROVER, APPROVER_2, REFUND, TOKEN_KEY, World

LINE = re.compile(r"^error \[(?P<code>[a-z_]+)\]: (?P<what>.+) — (?P<todo>.+)$")
GLOBEX_AGENT = Principal("u_77", "globex", actor="agent:support-bot")
GLOBEX_REFUND = {**REFUND, "order_id": "ord_2001"}


def gate_with(world: World, text: str | None) -> Gate:
    return Gate(
        world.gate.catalog,
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        policy=None if text is None else parse_policy(text),
    )


def problems_of(world: World, text: str) -> list[Problem]:
    parsed, problems = parse_with_problems(text)
    return problems + ([] if parsed is None else check_policy(parsed, world.gate.catalog))


def test_every_approval_policy_field_is_a_file_key() -> None:
    """Generic mapping: each ApprovalPolicy field but version is a key, with a coercion."""
    fields = {f.name for f in dataclasses.fields(ApprovalPolicy)} - {"version"}
    assert set(approval_fields()) == fields


T = "tools.refund_order"
CASES = [
    ("[tools.refund_ordr]\napprovals = 2\n", "unknown_tool", "tools.refund_ordr"),
    (f"[{T}]\naprovals = 2\n", "unknown_field", f"{T}.aprovals"),
    ('[defaults]\nrole = "finance team"\n', "invalid_value", "defaults.role"),
    (f"[{T}]\napprovals = 0\n", "invalid_value", f"{T}.approvals"),
    (f'[{T}]\ndevice = "maybe"\n', "invalid_value", f"{T}.device"),
    (f'[{T}]\nevidence = "email"\n', "invalid_value", f"{T}.evidence"),
    (f'[{T}.expiry]\nsoon = "5m"\n', "invalid_value", f"{T}.expiry"),
    (f"[{T}.thresholds]\nhigh = 5\n", "unknown_threshold", f"{T}.thresholds.high"),
    (
        f'[{T}.thresholds]\nhigh_risk_minor = "x"\n',
        "invalid_value",
        f"{T}.thresholds.high_risk_minor",
    ),
    (
        f'[[{T}.rules]]\nwhen = "context.args.amount_minor >"\n',
        "cedar_invalid",
        f"{T}.rules[0].when",
    ),
    (f'[[{T}.rules]]\nwhen = "context.args.amount > 1"\n', "cedar_invalid", f"{T}.rules 'rule 1'"),
    (f'[{T}]\nretype = ["amount"]\n', "invalid_value", f"{T}.retype"),
    (f'[{T}.escalation]\nescalate_after = "1h"\n', "invalid_value", f"{T}.escalation.targets"),
    (f"[{T}]\nrate = 1.5\n", "invalid_value", "<policy>"),
    (f"[{T}\n", "policy_syntax", "<policy>"),
    ("[surprise]\nx = 1\n", "unknown_section", "surprise"),
]


@pytest.mark.parametrize(("text", "code", "where"), CASES)
def test_check_names_each_problem(world: World, text: str, code: str, where: str) -> None:
    found = [(p.code, p.where) for p in problems_of(world, text)]
    assert (code, where) in found, found


def test_a_valid_file_has_no_problems_and_upstreams_go_to_their_checker(world: World) -> None:
    text = (Path(__file__).parent.parent / "examples" / "policy.toml").read_text()
    parsed, problems = parse_with_problems(text)
    assert parsed is not None and problems == []
    seen = []

    def gateway(section: object) -> list[Problem]:
        seen.append(section)
        return [Problem("upstream_invalid", "upstreams.github", "no url")]

    found = check_policy(parsed, world.gate.catalog, sections={"upstreams": gateway})
    assert [p.code for p in found] == ["upstream_invalid"] and seen == [parsed.upstreams]


def test_policy_check_prints_one_line_per_problem(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[tools.refund_ordr]\naprovals = 2\n")
    result = CliRunner().invoke(cli, ["policy", "check", str(path), "--demo"])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert [LINE.match(line)["code"] for line in lines] == ["unknown_field", "unknown_tool"]  # type: ignore[index]
    path.write_text("[tools.refund_order]\napprovals = 2\n")
    good = CliRunner().invoke(cli, ["policy", "check", str(path), "--demo"])
    assert good.exit_code == 0 and "is valid" in good.output


def test_the_file_overrides_the_python_policy_in_the_flow(world: World) -> None:
    """approvals = 2 in the file: one approval is not enough; the second confirms."""
    gate = gate_with(world, "[tools.refund_order]\napprovals = 2\n")
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    assert proposal.policy["approvals"] == 2
    first = gate.decide(
        APPROVER, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key="a"
    )
    assert first.proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    second = gate.decide(
        APPROVER_2, proposal.proposal_id, Decision(DecisionKind.APPROVE, 2), idempotency_key="b"
    )
    assert second.proposal.status is ProposalStatus.CONFIRMED


def test_a_tenant_section_applies_to_that_tenant_only(world: World) -> None:
    gate = gate_with(world, "[tenants.acme.tools.refund_order]\napprovals = 2\n")
    assert gate.propose(AGENT, "refund_order", REFUND).policy["approvals"] == 2
    assert gate.propose(GLOBEX_AGENT, "refund_order", GLOBEX_REFUND).policy["approvals"] == 1


def test_thresholds_move_the_risk_the_tool_computes(world: World) -> None:
    """The demo tool reads high_risk_minor from the effective policy: ¥199 becomes high risk,
    and its Python policy then asks for the amount to be re-typed."""
    default = world.gate.propose(AGENT, "refund_order", REFUND)
    assert default.risk.level == "medium"
    gate = gate_with(
        world, "[tenants.acme.tools.refund_order.thresholds]\nhigh_risk_minor = 10000\n"
    )
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    assert proposal.risk.level == "high" and proposal.policy["retype"] == ["amount_minor"]
    assert proposal.policy["thresholds"] == {"high_risk_minor": 10000}


def test_risk_levels_and_expiry_by_risk(world: World) -> None:
    gate = gate_with(
        world,
        "[tools.refund_order.thresholds]\nhigh_risk_minor = 10000\n"
        "[tools.refund_order.risk.high]\napprovals = 2\n"
        '[defaults.expiry]\nhigh = "2m"\nmedium = "30m"\n',
    )
    high = gate.propose(AGENT, "refund_order", REFUND)
    medium = gate.propose(AGENT, "refund_order", {**REFUND, "amount_minor": 5000})
    assert (high.policy["approvals"], medium.policy["approvals"]) == (2, 1)
    assert (high.expires_at - high.created_at).total_seconds() == 120
    assert (medium.expires_at - medium.created_at).total_seconds() == 1800


def test_cedar_conditions_are_evaluated_by_cedar(world: World) -> None:
    """A rule on the canonical arguments and the principal: agents asking over ¥150 need two."""
    gate = gate_with(
        world,
        "[[tools.refund_order.rules]]\n"
        'name = "agent, over 150"\n'
        'when = "context.principal.is_agent && context.args.amount_minor > 15000"\n'
        "approvals = 2\n",
    )
    big = gate.propose(AGENT, "refund_order", REFUND)
    small = gate.propose(AGENT, "refund_order", {**REFUND, "amount_minor": 15000})
    person = gate.propose(
        Principal("u_42", "acme"), "refund_order", {**REFUND, "order_id": "ord_1002"}
    )
    assert (big.policy["approvals"], big.policy["rules"]) == (2, ["agent, over 150"])
    assert small.policy["approvals"] == 1 and "rules" not in small.policy
    assert person.policy["approvals"] == 1


def test_a_condition_that_cannot_be_evaluated_refuses_and_stores_nothing(world: World) -> None:
    """A condition that validates but overflows at run time: never taken for yes or no."""
    gate = gate_with(
        world,
        "[[tools.refund_order.rules]]\n"
        'when = "context.args.amount_minor * 9223372036854775807 > 0"\napprovals = 2\n',
    )
    with pytest.raises(PolicyUndecidable):
        gate.propose(AGENT, "refund_order", REFUND)
    assert world.gate.proposals(AGENT) == []


def test_the_policy_version_is_the_digest_the_token_binds(world: World) -> None:
    proposal = world.gate.propose(AGENT, "refund_order", REFUND)
    assert proposal.policy_version == policy_version(proposal.policy)
    world.approve(proposal)
    with world.store.read() as tx:
        token = tx.token(tx.token_id_for(proposal.proposal_id) or "")
    assert token is not None and token.policy_version == proposal.policy_version
    other = gate_with(world, "[tools.refund_order]\napprovals = 2\n")
    changed = other.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})
    assert changed.policy_version != proposal.policy_version


def test_evidence_and_escalation_are_carried(world: World) -> None:
    gate = gate_with(
        world,
        '[tools.refund_order]\nevidence = "idp"\n'
        '[tools.refund_order.escalation]\nremind_after = ["10m", "5m"]\n'
        'escalate_after = "1h"\ntargets = ["role:finance_lead", "person:carol"]\n',
    )
    policy = gate.propose(AGENT, "refund_order", REFUND).policy
    assert policy["evidence"] == "idp"
    assert policy["escalation"] == {
        "remind_after": [300, 600],
        "escalate_after": 3600,
        "targets": ["role:finance_lead", "person:carol"],
    }


def test_a_reload_with_problems_keeps_the_policy_in_force(world: World, tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text("[tools.refund_order]\napprovals = 2\n")
    source = PolicySource(world.gate.catalog, path)
    path.write_text("[tools.refund_order]\napprovals = 0\n")
    with pytest.raises(PolicyFileError):
        source.reload()
    assert source.current is not None
    assert source.current.tools["refund_order"].values["approvals"] == 2
