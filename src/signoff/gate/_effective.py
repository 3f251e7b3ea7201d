"""The risk and the effective policy of a new proposal: the tool's Python declaration under
the policy file in force, its thresholds bound while the tool computes the risk."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from signoff._model import Principal
from signoff.catalog._thresholds import thresholds_in_effect
from signoff.catalog._tool import WriteTool
from signoff.catalog._types import ResourceState, Risk
from signoff.gate._context import GateContext
from signoff.policy import EffectivePolicy, effective_policy, thresholds_for


def proposal_policy(
    ctx: GateContext,
    tool: WriteTool[Any],
    principal: Principal,
    args: Any,
    state: ResourceState,
    arguments: Mapping[str, Any],
) -> tuple[Risk, EffectivePolicy]:
    policy = ctx.policy_file
    with thresholds_in_effect(thresholds_for(policy, tool, principal.tenant)):
        risk = tool.risk(args, state)
        base = tool.policy(args, state, risk)
    effective = effective_policy(
        policy,
        tool,
        principal,
        base,
        risk.level,
        arguments=arguments,
        resource_id=state.resource_id,
    )
    return risk, effective
