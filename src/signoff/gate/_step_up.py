"""Step-up: an approval under a policy that asks for a fresh or strong sign-in (rule 9).

``ApprovalPolicy.max_age`` and ``acr_values`` are the OpenID Connect parameters of the same
names. The approver's identity token (or the page session made from their ID token) says
when and how the provider last authenticated them (``auth_time``, ``acr``); an approval
counts only when that authentication is at most ``max_age`` seconds old on the server's
clock and its ``acr`` is one the policy names. Otherwise the answer is
:class:`~signoff.exceptions.StepUpRequired` carrying both, so the page sends the person to
the provider with them, and an API client asks its provider for such a token (RFC 9470).
What the provider returned is recorded with the decision.
"""

from __future__ import annotations

from typing import Any

from signoff._clock import to_micros
from signoff._model import Principal, Proposal
from signoff.exceptions import StepUpRequired

CLOCK_SKEW_SECONDS = 60
"""How far the identity provider's clock may run ahead of the server's."""
MICROS = 1_000_000


def step_up_of(proposal: Proposal) -> tuple[int | None, list[str]]:
    """The policy's ``max_age`` (seconds, or None) and ``acr_values`` (may be empty)."""
    max_age = proposal.policy.get("max_age")
    acr_values = [str(value) for value in proposal.policy.get("acr_values") or ()]
    return (None if max_age is None else int(max_age)), acr_values


def check_step_up(proposal: Proposal, principal: Principal, now: int) -> dict[str, Any] | None:
    """The authentication to record with this approval, None when the policy asks for none;
    :class:`StepUpRequired` when it is missing, too old or too weak."""
    max_age, acr_values = step_up_of(proposal)
    if max_age is None and not acr_values:
        return None
    auth_time = None if principal.auth_time is None else to_micros(principal.auth_time)
    if max_age is not None:
        if auth_time is None:
            _refuse(proposal, "your sign-in does not say when you authenticated", principal)
        assert auth_time is not None
        age = (now - auth_time) // MICROS
        if age < -CLOCK_SKEW_SECONDS:
            _refuse(proposal, "your sign-in's time is ahead of the server's clock", principal)
        if age > max_age:
            _refuse(
                proposal,
                f"you signed in {age} s ago; this approval needs a sign-in within {max_age} s",
                principal,
            )
    if acr_values and principal.acr not in acr_values:
        shown = principal.acr or "none"
        _refuse(proposal, f"your sign-in's authentication class is {shown}", principal)
    return {
        "acr": principal.acr,
        "auth_time": None if auth_time is None else auth_time // MICROS,
    }


def _refuse(proposal: Proposal, why: str, principal: Principal) -> None:
    max_age, acr_values = step_up_of(proposal)
    raise StepUpRequired(
        f"{why} — sign in again at your identity provider, then approve",
        proposal_id=proposal.proposal_id,
        max_age=max_age,
        acr_values=acr_values or None,
        acr=principal.acr,
    )
