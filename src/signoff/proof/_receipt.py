"""Signed receipts: one execution, provable alone, without the rest of the log.

A signed receipt is a JWS (``typ: signoff-receipt+jwt``) whose claims state
the proposal, tool + version, ``args_digest``, resource and state version,
the approvers (subject, role step, decision time, device assertion), the
request key, provider reference, outcome and time — and its evidence: the
proposal's audit events, each with an RFC 9162 inclusion proof to a signed
checkpoint. Every stated claim is *derived* from those events, so a verifier
recomputes the claims from the evidence and compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from signoff.audit._chain import AuditEvent
from signoff.proof._bundle import b64
from signoff.proof._events import event_to_dict, payload_of
from signoff.proof._jws import sign_jws
from signoff.proof._keys import SigningKey

RECEIPT_TYP = "signoff-receipt+jwt"
TERMINAL = ("execution.succeeded", "execution.failed_terminal", "execution.resolved")
STATED = (
    "tenant", "proposal_id", "execution_id", "op", "args_digest", "resource", "approvers",
    "request_key", "provider_reference", "outcome", "completed_at", "items", "mandate",
)  # fmt: skip


def stated_claims(events: Sequence[AuditEvent]) -> dict[str, Any]:
    """What the receipt states, read from the proposal's events alone."""
    created = next((e for e in events if e.kind == "proposal.created"), None)
    finished = [e for e in events if e.kind in TERMINAL]
    if created is None or not finished:
        return {}
    proposal, outcome = payload_of(created), finished[-1]
    result = payload_of(outcome)
    stated = {
        "tenant": created.tenant,
        "proposal_id": created.proposal_id,
        "execution_id": outcome.execution_id,
        "op": {"tool": proposal.get("tool"), "version": proposal.get("tool_version")},
        "args_digest": proposal.get("args_digest"),
        "resource": {"id": proposal.get("resource_id"), "state": proposal.get("state_version")},
        "approvers": [_approver(e) for e in events if e.kind == "decision.approved"],
        "request_key": next(
            (payload_of(e).get("request_key") for e in events if e.kind == "token.consumed"), None
        ),
        "provider_reference": result.get("provider_reference"),
        "outcome": result.get("status") or outcome.kind.removeprefix("execution."),
        "completed_at": outcome.at,
    }
    items = _items(events, outcome)
    if items is not None:
        stated["items"] = items  # a batch: each item's outcome, key and reference
    debited = next((e for e in events if e.kind == "mandate.debited"), None)
    if debited is not None:
        stated["mandate"] = _mandate(debited)
    return stated


def _items(events: Sequence[AuditEvent], outcome: AuditEvent) -> list[Any] | None:
    """A batch's items as the last outcome that reported them states them."""
    reported = [
        e
        for e in events
        if e.execution_id == outcome.execution_id
        and e.kind.startswith("execution.")
        and e.seq <= outcome.seq
        and "items" in payload_of(e)
    ]
    return payload_of(reported[-1])["items"] if reported else None


def proven_executions(events: Sequence[AuditEvent]) -> list[dict[str, Any]]:
    """Per finished execution among ``events``: what the events prove about it."""
    by_proposal: dict[str, list[AuditEvent]] = {}
    for event in events:
        if event.proposal_id is not None:
            by_proposal.setdefault(event.proposal_id, []).append(event)
    proven = []
    for group in by_proposal.values():
        claims = stated_claims(group)
        if claims:
            approvers = [
                {k: a[k] for k in ("subject", "role", "decided_at")} | {"device": bool(a["device"])}
                for a in claims["approvers"]
            ]
            proven.append({**claims, "approvers": approvers})
    return proven


def _mandate(event: AuditEvent) -> dict[str, Any]:
    """A write under a standing approval: the mandate, its approvers, what was left after it."""
    data = payload_of(event)
    names = ("mandate_id", "mandate_digest", "approvers", "amount_minor", "currency")
    return {
        **{name: data.get(name) for name in names},
        "remaining_amount_minor": data.get("remaining_amount_minor"),
        "remaining_count": data.get("remaining_count"),
    }


def _approver(event: AuditEvent) -> dict[str, Any]:
    data = payload_of(event)
    return {
        "subject": event.actor,
        "role": data.get("step"),
        "decided_at": event.at,
        "device": data.get("device"),
    }


def evidence_for(
    events: Sequence[AuditEvent], prove: Callable[[int], list[bytes]], checkpoint: str
) -> dict[str, Any]:
    """The events, each with ``prove(leaf index)``: its audit path to the root ``checkpoint`` signs.

    ``prove`` is ``PartialTree.inclusion_proof`` at the gate (only the events
    since an earlier checkpoint are read) or ``inclusion_proof(i, leaves)``.
    """
    return {
        "checkpoint": checkpoint,
        "events": [event_to_dict(e) for e in events],
        "proofs": [[b64(h) for h in prove(e.seq - 1)] for e in events],
    }


def sign_receipt(
    key: SigningKey,
    *,
    issuer: str,
    issued_at: int,
    events: Sequence[AuditEvent],
    evidence: dict[str, Any],
) -> str:
    claims = {"iss": issuer, "iat": issued_at, **stated_claims(events), "evidence": evidence}
    return sign_jws(key, claims, typ=RECEIPT_TYP)
