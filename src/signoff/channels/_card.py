"""What a chat message says about a proposal: the page's preview, and whether to offer buttons.

Channel-neutral (Slack blocks and Teams Adaptive Cards are drawn from it). It
carries what the page shows a person before deciding: title, operation, target,
every field with its display *and* machine value, impact, reversibility,
external reach, risk, who may approve, the deadline, and the agent's rationale
labelled untrusted. When any of it would not fit a chat message, or the policy
keeps the decision off chat (risk above ``chat_max_risk``, a passkey or the
identity provider needed, surfaces that do not list the chat), there are no
buttons: the card says why and links to the page ("Open to approve").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from signoff._i18n import localizer
from signoff._model import DecisionKind, Proposal, ProposalStatus
from signoff._text import visible
from signoff.catalog._types import policy_chat_max_risk, within_risk

MAX_TEXT = 1900
"""Longest value shown in a chat message; a longer one sends the person to the page."""
MAX_FIELDS = 30
EVIDENCE_KEYS = ("idp", "evidence", "vouched_by")
"""Policy keys asking for consent someone other than signoff vouches for (rule 17)."""


_VERBS = {
    DecisionKind.APPROVE: "approved",
    DecisionKind.REJECT: "rejected",
    DecisionKind.REQUEST_CHANGES: "requested changes",
}


@dataclass(frozen=True, slots=True)
class CardField:
    name: str
    label: str
    display: str
    machine: str


@dataclass(frozen=True, slots=True)
class Card:
    """Everything a chat message shows about one proposal at one version."""

    proposal_id: str
    version: int
    status: ProposalStatus
    title: str
    operation: str
    target: str
    fields: tuple[CardField, ...]
    impact: str
    reversibility: str
    external_reach: str
    risk: str
    risk_reasons: tuple[str, ...]
    approvers: str
    requester: str
    expires_at: str
    rationale: str | None
    page_url: str
    digest: str
    decided: tuple[str, ...]
    """Each decision so far in words: ``alice approved at …``."""
    open_reason: str | None
    """Why there are no buttons (the page decides), ``None`` when the chat may decide."""
    retype: tuple[tuple[str, str], ...]
    """(field name, label) to re-type in a modal before approving."""
    reasons: tuple[tuple[str, str], ...]
    """The tool's reject reasons, code → label."""

    @property
    def awaiting(self) -> bool:
        return self.status is ProposalStatus.AWAITING_CONFIRMATION

    @property
    def buttons(self) -> bool:
        return self.awaiting and self.open_reason is None


def page_url(public_url: str, proposal_id: str) -> str:
    return f"{public_url.rstrip('/')}/ui/proposals/{quote(proposal_id, safe='')}"


def when(moment: datetime, zone_name: str | None = None) -> str:
    """``2026-09-01 14:20:00 +08:00`` in the tenant's zone (UTC when none is set)."""
    return localizer(zone_name=zone_name).when(moment)


def build_card(
    proposal: Proposal,
    *,
    surface: str,
    public_url: str,
    deployment_surfaces: tuple[str, ...] = (),
    reasons: dict[str, str] | None = None,
    time_zone: str | None = None,
) -> Card:
    preview = proposal.preview
    fields = tuple(
        CardField(
            visible(f.name),
            visible(f.label),
            visible(f.display_value),
            visible(json.dumps(f.machine_value, ensure_ascii=False, sort_keys=True)),
        )
        for f in preview.fields
    )
    card = Card(
        proposal_id=proposal.proposal_id,
        version=proposal.version,
        status=proposal.status,
        title=visible(preview.title),
        operation=f"{proposal.tool} (version {proposal.tool_version}) — "
        + visible(preview.description),
        target=visible(proposal.resource_id),
        fields=fields,
        impact=visible(preview.impact),
        reversibility=visible(preview.reversibility),
        external_reach=visible(preview.external_reach) or "None",
        risk=proposal.risk.level.value,
        risk_reasons=tuple(visible(r) for r in proposal.risk.reasons),
        approvers=_approvers(proposal),
        requester=proposal.requester_subject
        + (f" — asked by the agent {proposal.requester_actor}" if proposal.requester_actor else ""),
        expires_at=when(proposal.expires_at, time_zone),
        rationale=None if proposal.rationale is None else visible(proposal.rationale),
        page_url=page_url(public_url, proposal.proposal_id),
        digest=proposal.args_digest,
        decided=tuple(
            f"{a.approver} {_VERBS[a.kind]}"
            f" at {when(a.decided_at, time_zone)}"
            + (f" ({a.reason_code})" if a.reason_code else "")
            for a in proposal.approvals
        ),
        open_reason=None,
        retype=tuple(
            (str(name), _label(proposal, str(name))) for name in proposal.policy.get("retype") or ()
        ),
        reasons=tuple((reasons or {"other": "Other (explain below)"}).items()),
    )
    reason = open_reason(proposal, surface, deployment_surfaces, card)
    return _with_reason(card, reason)


def open_reason(
    proposal: Proposal, surface: str, deployment: tuple[str, ...], card: Card | None = None
) -> str | None:
    """Why this proposal is not decided in ``surface``, in words; ``None`` when it may be."""
    policy = proposal.policy
    allowed = list(policy.get("surfaces") or ()) or list(deployment)
    if allowed and surface not in allowed:
        return f"Decisions on this proposal are made through {', '.join(sorted(allowed))}."
    if not within_risk(proposal.risk.level, policy_chat_max_risk(policy)):
        return f"A {proposal.risk.level.value}-risk proposal is decided on the confirmation page."
    if str(policy.get("device") or "none") != "none":
        return "Approving it is signed with your passkey on the confirmation page."
    if any(policy.get(key) for key in EVIDENCE_KEYS):
        return "Approving it needs your identity provider, on the confirmation page."
    if card is not None and not _fits(card):
        return "It is too long to show in full here; every value is on the confirmation page."
    return None


def _with_reason(card: Card, reason: str | None) -> Card:
    from dataclasses import replace

    return replace(card, open_reason=reason)


def _fits(card: Card) -> bool:
    texts: list[Any] = [card.title, card.operation, card.target, card.impact, card.rationale or ""]
    texts += [card.reversibility, card.external_reach]
    texts += [x for f in card.fields for x in (f.label, f.display, f.machine)]
    return len(card.fields) <= MAX_FIELDS and all(len(str(t)) <= MAX_TEXT for t in texts)


def _approvers(proposal: Proposal) -> str:
    policy = proposal.policy
    parts = []
    if policy.get("requester_confirms"):
        parts.append(f"{proposal.requester_subject} confirms their own request")
    role = proposal.required_role
    if role is not None:
        count = int(policy.get("approvals") or 1)
        parts.append(f"{count} holder{'s' if count != 1 else ''} of {role}")
    return ", then ".join(parts)


def _label(proposal: Proposal, name: str) -> str:
    shown = proposal.preview.field(name)
    return name if shown is None else visible(shown.label)
