"""Approvals the identity provider vouches for (``evidence: idp``): asked for, checked, recorded.

Under a policy whose ``evidence`` is ``idp`` an approval counts only with a token the
approver's identity provider signed after authenticating them on their own device (OpenID
CIBA, started by :func:`start_idp_approval`), whose ``signoff_proposal``
``authorization_details`` name exactly this proposal, version and digest, for this person.
A token naming anything else is refused (``evidence_mismatch``); what was accepted goes
into the decision's audit event (``idp``: issuer and token) for offline verifiers.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Protocol

from signoff._model import Decision, DecisionKind, Principal, Proposal
from signoff.exceptions import EvidenceInvalid, EvidenceMismatch, EvidenceRequired
from signoff.proof._idp import (
    AUTHORIZATION_TYPE,
    EvidenceRejected,
    IdentityProvider,
    signoff_authorization,
    verify_idp_evidence,
)

if TYPE_CHECKING:
    from signoff.gate._context import GateContext
    from signoff.identity._ciba import CibaPending

IDP = "idp"
MICROS = 1_000_000
AMOUNT_FIELDS = ("amount_minor", "amount")
BINDING_LENGTH = 64
HINT = 'approve through your identity provider: POST the decision with "evidence": "idp"'


class Backchannel(Protocol):
    """signoff's CIBA client at the approvers' identity provider (``identity.CibaClient``)."""

    def provider(self) -> IdentityProvider: ...

    def start(
        self, *, login_hint: str, authorization_details: Any, binding_message: str
    ) -> CibaPending: ...

    def poll(self, auth_req_id: str) -> str | None: ...


def needs_idp(proposal: Proposal) -> bool:
    return proposal.policy.get("evidence") == IDP


def authorization_for(proposal: Proposal, version: int) -> dict[str, Any]:
    """The ``signoff_proposal`` entry the person approves on their device."""
    amount = next(
        (f.display_value for name in AMOUNT_FIELDS if (f := proposal.preview.field(name))), None
    )
    return signoff_authorization(
        proposal_id=proposal.proposal_id,
        version=version,
        tenant=proposal.tenant,
        tool=proposal.tool,
        args_digest=proposal.args_digest,
        title=proposal.preview.title,
        amount=amount,
    )


def binding_message_for(proposal: Proposal) -> str:
    """A short plain text shown on the device and beside the proposal (CIBA §7.1)."""
    text = f"{proposal.proposal_id[-8:]} {proposal.preview.title}"
    return re.sub(r"[^A-Za-z0-9 .,:#_-]", " ", text)[:BINDING_LENGTH].strip()


def check_idp(
    ctx: GateContext, principal: Principal, proposal: Proposal, decision: Decision, now: int
) -> dict[str, Any] | None:
    """The provider's evidence to record with this approval; None when none came or is needed."""
    if decision.kind is not DecisionKind.APPROVE:
        return None
    if decision.idp is None:
        if needs_idp(proposal):
            raise EvidenceRequired(
                f"this approval must be vouched for by your identity provider — {HINT}",
                proposal_id=proposal.proposal_id,
            )
        return None
    if ctx.backchannel is None:
        raise EvidenceInvalid(
            "no identity provider is configured to vouch for approvals",
            proposal_id=proposal.proposal_id,
        )
    facts = {"proposal_id": proposal.proposal_id, "tenant": proposal.tenant,
             "tool": proposal.tool, "args_digest": proposal.args_digest}  # fmt: skip
    provider = ctx.backchannel.provider()
    try:
        claims = verify_idp_evidence(
            decision.idp, [provider], subject=principal.subject, proposal=facts,
            decided_at=now // MICROS,
        )  # fmt: skip
    except EvidenceRejected as exc:
        error = EvidenceMismatch if exc.code == "evidence_mismatch" else EvidenceInvalid
        raise error(exc.message, proposal_id=proposal.proposal_id) from None
    entry = next(d for d in claims["authorization_details"] if d["type"] == AUTHORIZATION_TYPE)
    if entry["version"] != decision.expected_version:
        raise EvidenceMismatch(
            f"the provider's token approves version {entry['version']}, not this one",
            proposal_id=proposal.proposal_id,
        )
    return {"issuer": provider.issuer, "token": decision.idp["token"]}


def start_idp_approval(
    ctx: GateContext, principal: Principal, proposal: Proposal, version: int
) -> CibaPending:
    """Ask the person's identity provider to have them approve this proposal on their device."""
    if ctx.backchannel is None:
        raise EvidenceInvalid(
            "no identity provider is configured to vouch for approvals",
            proposal_id=proposal.proposal_id,
        )
    return ctx.backchannel.start(
        login_hint=principal.subject,
        authorization_details=[authorization_for(proposal, version)],
        binding_message=binding_message_for(proposal),
    )
