"""What a decision must carry, checked before anything is read: key, reason, re-typed values.

The rules of the decision's *content* (PROTOCOL rule 6): a bounded idempotency key, a
reason code for a rejection (one of the tool's), re-typed values equal to what the page
showed; and the JCS fingerprint that makes a replay recognisable.
"""

from __future__ import annotations

from signoff._canonical import fingerprint
from signoff._model import Decision, DecisionKind, Proposal
from signoff.catalog._types import typed_form
from signoff.exceptions import InvalidRequest, RetypeMismatch, UnknownTool
from signoff.gate._context import GateContext
from signoff.gate._device import device_rule

MAX_KEY_LENGTH = 255
MAX_REASON = 2000


def decision_fingerprint(proposal_id: str, decision: Decision) -> str:
    return fingerprint(
        "decide",
        {
            "proposal_id": proposal_id,
            "decision": decision.kind.value,
            "expected_version": decision.expected_version,
            "reason_code": reason_code_of(decision),
            "reason": decision.reason,
            "retyped": decision.retyped,
            # Only when given, so approvals and rejections keep their fingerprints.
            **({"suggestion": decision.suggestion} if decision.suggestion is not None else {}),
        },
    )


def validate_decision(decision: Decision, key: str) -> None:
    if not key or len(key) > MAX_KEY_LENGTH:
        raise InvalidRequest(f"an idempotency key of 1 to {MAX_KEY_LENGTH} characters is required")
    if decision.kind is DecisionKind.REJECT and decision.reason_code is None:
        raise InvalidRequest("a rejection needs a reason_code")
    if decision.reason is not None and len(decision.reason) > MAX_REASON:
        raise InvalidRequest(f"reason longer than {MAX_REASON} characters")
    if decision.kind is DecisionKind.REQUEST_CHANGES:
        _check_suggestion(decision)
    elif decision.suggestion is not None:
        raise InvalidRequest("a suggestion belongs to request_changes only")
    if isinstance(decision.expected_version, bool) or not isinstance(
        decision.expected_version, int
    ):
        raise InvalidRequest("expected_version must be an integer")


MAX_SUGGESTED = 32
MAX_SUGGESTION = 8000


def _check_suggestion(decision: Decision) -> None:
    """A note, or fields with suggested values (JSON), or both; bounded."""
    fields = decision.suggestion or {}
    if not isinstance(fields, dict) or len(fields) > MAX_SUGGESTED:
        raise InvalidRequest(f"suggest at most {MAX_SUGGESTED} fields, as name → value")
    if not fields and not decision.reason:
        raise InvalidRequest("a request for changes needs a note or suggested field values")
    if any(not isinstance(k, str) or not 0 < len(k) <= 64 for k in fields):
        raise InvalidRequest("suggested fields are argument names")
    if len(suggestion_text(decision)) > MAX_SUGGESTION:
        raise InvalidRequest(f"the suggestion is longer than {MAX_SUGGESTION} characters")


def suggestion_text(decision: Decision) -> str:
    """What the decision row keeps as its reason: ``{"fields": …, "note": …}`` as JCS."""
    from signoff._canonical import canonical_json

    body = {"note": decision.reason or "", "fields": decision.suggestion or {}}
    return canonical_json(body).decode()


def reason_code_of(decision: Decision) -> str | None:
    return None if decision.reason_code is None else str(decision.reason_code)


def check_reason(ctx: GateContext, proposal: Proposal, decision: Decision) -> None:
    """A rejection gives one of the reasons the tool offers (``other`` always)."""
    if decision.kind is not DecisionKind.REJECT or decision.reason_code is None:
        if decision.kind is DecisionKind.REQUEST_CHANGES:
            _check_suggested_fields(ctx, proposal, decision)
        return
    try:
        offered = ctx.catalog.get(proposal.tool).reasons()
    except UnknownTool:
        return  # the tool left the catalog: any well-formed code stands
    if str(decision.reason_code) not in offered:
        raise InvalidRequest(
            f"reason_code must be one of {', '.join(offered)} for {proposal.tool}",
            proposal_id=proposal.proposal_id,
        )


def _check_suggested_fields(ctx: GateContext, proposal: Proposal, decision: Decision) -> None:
    """Suggested fields are the tool's arguments (the new proposal is validated in full)."""
    unknown = sorted(set(decision.suggestion or {}) - set(proposal.arguments))
    if unknown:
        raise InvalidRequest(
            f"suggested fields must be arguments of {proposal.tool}: not {', '.join(unknown)}",
            proposal_id=proposal.proposal_id,
        )


def check_retyped(proposal: Proposal, decision: Decision) -> None:
    """Each re-typed value equals what the page displays (or the machine value), as typed.

    A device signature over the decision stands in for re-typing where the
    policy asks for one (``check_device`` verifies it).
    """
    if decision.device is not None and device_rule(proposal) != "none":
        return
    fields = proposal.policy.get("retype") or []
    typed = decision.retyped or {}
    for name in fields:
        entry = typed.get(name)
        accepted = {typed_form(str(proposal.arguments.get(name)))}
        shown = proposal.preview.field(name)
        if shown is not None:
            accepted.add(typed_form(shown.display_value))
        if entry is None or typed_form(entry) not in accepted:
            raise RetypeMismatch(
                f"re-type the value of {name!r} exactly as shown to approve",
                proposal_id=proposal.proposal_id,
                field=name,
            )
