"""Refusals and clarifications as answers a model can act on: a code, an action, a next step.

The mapping from the exception hierarchy lives here once, for OpenAI and MCP
alike. Distinct outcomes stay distinct: ``expired`` asks for a new proposal,
``unknown`` says to check the status and never to retry blindly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from signoff.agents._names import STATUS_TOOL, execute_name, request_name
from signoff.exceptions import (
    ClarificationNeeded,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotAuthenticated,
    NotFound,
    SignoffError,
    StoreError,
)


@dataclass(frozen=True, slots=True)
class _Advice:
    action: str
    next_step: str


# {request}, {execute} and {status} are filled with the tool names of the call.
_BY_CODE: dict[str, _Advice] = {
    "invalid_arguments": _Advice(
        "fix_arguments",
        "Correct the arguments named in details.errors and call {request} again. Ask the user "
        "for any value you do not know; never guess one.",
    ),
    "unknown_tool": _Advice("stop", "Use only the tools you were given."),
    "not_authenticated": _Advice(
        "stop", "Your credentials are missing or expired. Stop and tell the user."
    ),
    "not_found": _Advice(
        "ask_user",
        "Nothing with that id exists for you. Check the id you used (never guess ids) or ask "
        "the user which one they meant.",
    ),
    "forbidden": _Advice(
        "stop", "You may not do this. Tell the user; do not retry or look for another way."
    ),
    "not_entitled": _Advice("stop", "This person may not confirm it; an entitled one must."),
    "separation_of_duties": _Advice(
        "stop", "A different person must confirm this; an agent never can. Do not retry."
    ),
    "subject_mismatch": _Advice(
        "stop",
        "Only the agent that requested this proposal may use its confirmation. Do not retry.",
    ),
    "invalid_token": _Advice(
        "check_status",
        "That confirmation token is not valid for this proposal. Call {status} and use the "
        "confirmation_token it returns once the proposal is confirmed; never invent or edit one.",
    ),
    "audience_mismatch": _Advice("stop", "The token is meant for another executor. Do not retry."),
    "version_conflict": _Advice(
        "check_status", "The proposal changed meanwhile. Call {status} to see where it stands."
    ),
    "expired": _Advice(
        "new_proposal",
        "The confirmation window closed and nothing was done. If the user still wants this, "
        "call {request} again to make a new proposal, which needs a new confirmation.",
    ),
    "preview_expired": _Advice(
        "new_proposal",
        "Nobody decided before the proposal's deadline, so nothing was done. If the user still "
        "wants this, call {request} again to make a new proposal.",
    ),
    "token_expired": _Advice(
        "new_proposal",
        "The confirmation expired before the action ran, so nothing was done. If the user still "
        "wants this, call {request} again to make a new proposal, which needs a new confirmation.",
    ),
    "attempts_exhausted": _Advice(
        "stop",
        "Every allowed attempt failed; nothing more will be tried. Tell the user what happened.",
    ),
    "step_up_required": _Advice(
        "ask_user",
        "The person must sign in again at their identity provider (a fresher or stronger "
        "sign-in) and then approve on the confirmation page. Tell the user; do not retry.",
    ),
    "surface_not_allowed": _Advice(
        "stop",
        "This decision must be made through another approval system. Tell the user where.",
    ),
    "already_consumed": _Advice(
        "check_status",
        "This confirmation was already used; the action will not run again. Do not call "
        "{execute} again: read the outcome and receipt in details or with {status}.",
    ),
    "revoked": _Advice(
        "stop", "A person revoked this confirmation; nothing was done. Tell the user."
    ),
    "approver_revoked": _Advice(
        "new_proposal",
        "An approver lost the right to approve, so nothing was done. Tell the user; a new "
        "proposal ({request}) needs a new confirmation.",
    ),
    "requester_revoked": _Advice(
        "stop",
        "The person this request was made for no longer holds a role the request relied on, "
        "so nothing was done. Tell the user; an administrator decides whether it comes back.",
    ),
    "args_mismatch": _Advice(
        "stop",
        "The proposal, token and tool do not belong together; nothing was done. Use the "
        "execute tool of the proposal's own tool with its own token, or ask the user.",
    ),
    "state_changed": _Advice(
        "new_proposal",
        "The target changed after the person saw the preview, so nothing was done. Call "
        "{request} again so a person can confirm the current state.",
    ),
    "execution_in_progress": _Advice(
        "check_status",
        "The action is running now. Do not call {execute} again; call {status} later.",
    ),
    "idempotency_key_in_flight": _Advice(
        "check_status", "The first attempt is still running; call {status} later."
    ),
    "idempotency_key_reused": _Advice("stop", "That key belongs to another request. Do not retry."),
    "retype_mismatch": _Advice(
        "stop", "The re-typed value did not match the preview; a person must confirm on the page."
    ),
    "unknown": _Advice(
        "check_status",
        "The outcome is unknown: the action may or may not have happened. Never retry blindly "
        "and never make a new proposal for it. Call {status} later.",
    ),
    "mandate_exceeded": _Advice(
        "ask_user",
        "The standing approval does not cover this amount (details.constraint says which limit). "
        "Nothing was done. Ask the user; a person can confirm it as an ordinary proposal "
        "({request} without mandate_id).",
    ),
    "mandate_exhausted": _Advice(
        "ask_user",
        "The standing approval is used up. Nothing was done. Ask the user for a new one or for "
        "an ordinary confirmation ({request} without mandate_id).",
    ),
    "mandate_expired": _Advice(
        "ask_user",
        "The standing approval's validity window closed. Nothing was done. Ask the user.",
    ),
    "mandate_revoked": _Advice(
        "stop",
        "The standing approval was revoked or ended. Nothing was done. Tell the user; do not "
        "retry under it.",
    ),
    "mandate_not_applicable": _Advice(
        "ask_user",
        "The standing approval does not cover this write (details.constraint says why). Nothing "
        "was done. Ask the user; do not try another mandate or agent to get around it.",
    ),
    "policy_undecidable": _Advice(
        "stop",
        "The deployment's policy could not decide on these arguments. Nothing was done. Tell the "
        "user; an operator must fix the policy.",
    ),
    "upstream_unavailable": _Advice(
        "check_status",
        "The MCP server behind signoff cannot be reached; nothing was sent to it. Tell the user "
        "and try again later; do not look for another way to do it.",
    ),
    "store_unavailable": _Advice(
        "check_status",
        "signoff cannot reach its store and knows no outcome. Do not make a new proposal; call "
        "{status} later.",
    ),
}

_BY_PROPOSAL_STATUS: dict[str, _Advice] = {
    "awaiting_confirmation": _Advice(
        "check_status",
        "A person has not confirmed yet. Tell the user where to confirm (confirm_url) and call "
        "{status} later; do not make another proposal for the same thing.",
    ),
    "declined": _Advice(
        "stop", "A person declined this proposal. Tell the user; do not retry or re-propose it."
    ),
    "cancelled": _Advice("stop", "The proposal was cancelled; nothing will run."),
    "expired": _Advice(
        "new_proposal",
        "The proposal expired and nothing was done. If the user still wants it, call {request} "
        "again.",
    ),
    "revoked": _Advice("stop", "The confirmation was revoked; nothing will run. Tell the user."),
}


def refusal_payload(exc: SignoffError, *, write_tool: str | None = None) -> dict[str, Any]:
    """The JSON a model receives for a refusal: code, message, action and next step."""
    if isinstance(exc, ClarificationNeeded):
        return clarification_payload(exc, write_tool=write_tool)
    advice = _advice(exc)
    return {
        "kind": "refusal",
        "code": exc.code,
        "message": exc.message,
        "action": advice.action,
        "next_step": _fill(advice.next_step, write_tool),
        "details": _json_safe(exc.details),
    }


def clarification_payload(
    exc: ClarificationNeeded, *, write_tool: str | None = None
) -> dict[str, Any]:
    tool = exc.details.get("tool", write_tool)
    field = exc.details.get("field")
    return {
        "kind": "clarification",
        "code": exc.code,
        "question": exc.message,
        "field": field if isinstance(field, str) else None,
        "tool": tool,
        "next_step": _fill(
            "Nothing was created. Ask the user exactly this question, then call {request} again "
            "with their answer. Do not fill the value in yourself.",
            tool if isinstance(tool, str) else write_tool,
        ),
    }


def _advice(exc: SignoffError) -> _Advice:
    if exc.code == "invalid_state":
        status = exc.details.get("status")
        return _BY_PROPOSAL_STATUS.get(
            str(status),
            _Advice(
                "check_status", "The proposal is not in a state that allows this. Call {status}."
            ),
        )
    if exc.code in _BY_CODE:
        return _BY_CODE[exc.code]
    if isinstance(exc, InvalidRequest):
        return _Advice(
            "fix_arguments", "The request was malformed; correct it before calling again."
        )
    if isinstance(exc, NotAuthenticated | Forbidden):
        return _BY_CODE["forbidden"]
    if isinstance(exc, NotFound):
        return _BY_CODE["not_found"]
    if isinstance(exc, Conflict):
        return _Advice(
            "check_status", "It conflicts with the proposal's current state. Call {status}."
        )
    if isinstance(exc, StoreError):
        return _BY_CODE["store_unavailable"]
    return _Advice("stop", "signoff could not do this. Tell the user; do not retry.")


def _fill(template: str, write_tool: str | None) -> str:
    return template.format(
        request=request_name(write_tool) if write_tool else "the request tool",
        execute=execute_name(write_tool) if write_tool else "the execute tool",
        status=STATUS_TOOL,
    )


def _json_safe(details: dict[str, Any]) -> dict[str, Any]:
    safe: dict[str, Any] = json.loads(json.dumps(details, default=str))
    return safe
