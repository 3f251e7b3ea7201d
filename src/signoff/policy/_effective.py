"""The effective policy of one proposal (or one mandate): the tool's Python declaration,
overridden by the policy file's layers, its risk level and its matching rules.

``policy_version`` is ``sha256(JCS(effective policy without its version))``: two
proposals bound to one version were approved under exactly the same rules.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from signoff._canonical import canonical_json
from signoff._model import Principal
from signoff.catalog._tool import WriteTool
from signoff.catalog._types import ApprovalPolicy, RiskLevel
from signoff.exceptions import ConfigurationError, MandateNotApplicable
from signoff.policy._cedar import cedar_request
from signoff.policy._fields import approval_fields
from signoff.policy._file import PolicyFile

DEFAULT_MANDATE_TTL = 24 * 3600
DEFAULT_COVERS_RISK = ("low", "medium")
"""High and critical risk are never covered by a mandate unless the policy says so."""


@dataclass(frozen=True, slots=True)
class EffectivePolicy:
    """What applies: the approval rules, the carried settings, the expiry and the version."""

    approval: ApprovalPolicy
    carried: Mapping[str, Any]
    ttl: timedelta
    version: str

    def to_dict(self) -> dict[str, Any]:
        """The proposal's ``policy``: the approval fields, the carried settings, the version."""
        return {**_body(self.approval, self.carried), "version": self.version}

    @property
    def mandates(self) -> bool:
        return bool(self.carried.get("mandates"))

    @property
    def mandate_fallback(self) -> bool:
        return bool(self.carried.get("mandate_fallback"))


def policy_version(policy: Mapping[str, Any]) -> str:
    """The digest of a recorded policy's canonical form, its own ``version`` left out."""
    body = {k: v for k, v in policy.items() if k != "version"}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def _body(approval: ApprovalPolicy, carried: Mapping[str, Any]) -> dict[str, Any]:
    recorded = approval.to_dict()
    recorded.pop("version", None)
    return {**recorded, **carried}


def thresholds_for(policy: PolicyFile | None, tool: WriteTool[Any], tenant: str) -> dict[str, Any]:
    """The thresholds ``tool.risk()`` reads: its declared defaults, then the file's layers."""
    values = dict(tool.thresholds)
    for layer in policy.layers(tool.name, tenant) if policy else ():
        values.update({k: v for k, v in layer.thresholds.items() if k in values})
    return values


def effective_policy(
    policy: PolicyFile | None,
    tool: WriteTool[Any],
    principal: Principal,
    base: ApprovalPolicy,
    risk: RiskLevel,
    *,
    arguments: Mapping[str, Any],
    resource_id: str,
) -> EffectivePolicy:
    """The file's layers over ``base`` (what ``tool.policy()`` returned), for one proposal."""
    layers = policy.layers(tool.name, principal.tenant) if policy else []
    values: dict[str, Any] = {}
    for layer in layers:
        _merge(values, layer.values)
        _merge(values, layer.risk.get(risk.value, {}))
    request = None
    matched: list[str] = []
    for layer in layers:
        for rule in layer.rules:
            if request is None:
                request = cedar_request(
                    tool=tool.name,
                    arguments=arguments,
                    principal=principal,
                    risk=risk.value,
                    resource_id=resource_id,
                )
            if rule.condition.holds(request):
                _merge(values, rule.values)
                matched.append(rule.name)
    escalation: dict[str, Any] = {}
    for layer in layers:
        escalation.update(layer.escalation)
    approval = _approval(base, values, tool.name)
    expiry = values.get("expiry", {})
    ttl = timedelta(seconds=expiry[risk.value]) if risk.value in expiry else tool.ttl
    carried: dict[str, Any] = {
        "expiry_seconds": int(ttl.total_seconds()),
        "mandates": bool(values.get("mandates", tool.mandates)),
    }
    if values.get("mandate_fallback"):
        carried["mandate_fallback"] = True
    if "evidence" in values:
        carried["evidence"] = values["evidence"]
    if tool.thresholds:
        carried["thresholds"] = thresholds_for(policy, tool, principal.tenant)
    if escalation:
        carried["escalation"] = escalation
    if matched:
        carried["rules"] = matched
    return _finish(approval, carried, ttl)


def mandate_policy(policy: PolicyFile | None, tool: WriteTool[Any], tenant: str) -> EffectivePolicy:
    """How a mandate over ``tool`` is approved: the tool's declared approvers, the file's
    layers (without risk levels or rules: a mandate has no arguments yet), then each
    layer's ``[….mandate]`` table."""
    layers = policy.layers(tool.name, tenant) if policy else []
    values: dict[str, Any] = {}
    for layer in layers:
        _merge(values, layer.values)
    own: dict[str, Any] = {}
    for layer in layers:
        mandate = dict(layer.mandate)
        own.update({k: mandate.pop(k) for k in ("max_ttl", "covers_risk") if k in mandate})
        _merge(values, mandate)
    values.pop("retype", None)
    values.pop("in_band", None)
    declared = {
        "role": tool.approver_role,
        "requester_confirms": tool.requester_confirms,
        "approvals": tool.approvals,
    }
    fields = {**declared, **{k: v for k, v in values.items() if k in approval_fields()}}
    try:
        approval = ApprovalPolicy(**{**fields, "retype": (), "in_band": False})
    except ValueError as exc:
        raise MandateNotApplicable(
            f"{tool.name} declares no approver for a standing approval ({exc}); set one in "
            f"the policy file's [tools.{tool.name}.mandate]",
            constraint="policy",
        ) from None
    max_ttl = int(own.get("max_ttl", DEFAULT_MANDATE_TTL))
    carried = {
        "mandate": {
            "max_ttl_seconds": max_ttl,
            "covers_risk": list(own.get("covers_risk", DEFAULT_COVERS_RISK)),
        }
    }
    return _finish(approval, carried, timedelta(seconds=max_ttl))


def mandate_coverage(policy: PolicyFile | None, tool: WriteTool[Any], tenant: str) -> list[str]:
    """The risk levels mandates over ``tool`` may cover now, by the current file."""
    covers: list[str] = list(DEFAULT_COVERS_RISK)
    for layer in policy.layers(tool.name, tenant) if policy else ():
        covers = list(layer.mandate.get("covers_risk", covers))
    return covers


def _merge(values: dict[str, Any], layer: Mapping[str, Any]) -> None:
    for key, value in layer.items():
        if key == "expiry":
            values["expiry"] = {**values.get("expiry", {}), **value}
        else:
            values[key] = value


def _approval(base: ApprovalPolicy, values: Mapping[str, Any], tool: str) -> ApprovalPolicy:
    fields = {k: v for k, v in values.items() if k in approval_fields()}
    try:
        return dataclasses.replace(base, **fields)
    except ValueError as exc:
        raise ConfigurationError(
            f"the policy file makes {tool}'s policy invalid: {exc} — fix it and reload"
        ) from None


def _finish(
    approval: ApprovalPolicy, carried: Mapping[str, Any], ttl: timedelta
) -> EffectivePolicy:
    body = _body(approval, carried)
    version = hashlib.sha256(canonical_json(body)).hexdigest()
    return EffectivePolicy(approval, dict(carried), ttl, version)
