"""JSON Schemas of what the agent tools return (MCP ``outputSchema``; OpenAI tool output).

Every answer is an object with a ``kind``: ``proposal`` (a request was frozen,
or its status), ``execution`` (the write ran, or was looked up),
``clarification`` (ask the person; nothing was created) or ``refusal`` (the
protocol said no; nothing changed). Each carries a ``next_step`` a model can
follow, and refusals an ``action`` it can branch on.
"""

from __future__ import annotations

from typing import Any

REFUSAL_ACTIONS = ("fix_arguments", "ask_user", "new_proposal", "check_status", "stop")

# No `type` arrays ("string" or null is an anyOf) and a type on every value: what
# portable validators and MCP clients such as the Inspector accept without warnings.
_STRING = {"type": "string"}
_NULL = {"type": "null"}
_NULLABLE_STRING = {"anyOf": [_STRING, _NULL]}
# A preview field's machine value is any JSON value the arguments hold.
_JSON_VALUE = {
    "description": "The value exactly as the executor will use it (any JSON value).",
    "anyOf": [
        {"type": "string"},
        {"type": "integer"},
        {"type": "number"},
        {"type": "boolean"},
        {"type": "array"},
        {"type": "object"},
        _NULL,
    ],
}


def _or_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or null, its description kept on the union."""
    inner = {k: v for k, v in schema.items() if k != "description"}
    described = {"description": schema["description"]} if "description" in schema else {}
    return {**described, "anyOf": [inner, _NULL]}


_PREVIEW: dict[str, Any] = {
    "type": "object",
    "description": "What the person sees before deciding, rendered from the frozen snapshot.",
    "properties": {
        "title": _STRING,
        "description": _STRING,
        "fields": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "name": _STRING,
                    "label": _STRING,
                    "machine_value": _JSON_VALUE,
                    "display_value": _STRING,
                },
                "required": ["name", "label", "machine_value", "display_value"],
            },
        },
        "impact": _STRING,
        "reversibility": _STRING,
        "external_reach": _STRING,
        "facts": {"type": "array", "items": _STRING},
    },
    "required": ["title", "fields", "impact", "reversibility"],
}

_RECEIPT: dict[str, Any] = _or_null(
    {
        "type": "object",
        "description": "Proof of a finished execution.",
        "properties": {
            "execution_id": _STRING,
            "proposal_id": _STRING,
            "action_id": _STRING,
            "request_key": _STRING,
            "operation": _STRING,
            "status": _STRING,
            "args_digest": _STRING,
            "provider_reference": _NULLABLE_STRING,
            "approvers": {"type": "array", "items": _STRING},
            "completed_at": _NULLABLE_STRING,
            "items": {
                "type": "array",
                "description": "A batch: each item's own outcome, request key and provider "
                "reference; a failed item is reported on its own.",
                "items": {
                    "type": "object",
                    "properties": {
                        "resource": _STRING,
                        "request_key": _STRING,
                        "status": {
                            "type": "string",
                            "enum": ["succeeded", "failed_retryable", "failed_terminal"],
                        },
                        "provider_reference": _NULLABLE_STRING,
                        "error_code": _NULLABLE_STRING,
                    },
                    "required": ["resource", "request_key", "status"],
                },
            },
        },
        "required": ["execution_id", "proposal_id", "request_key", "operation", "status"],
    }
)

_DECISION: dict[str, Any] = {
    "type": "object",
    "description": "The decision receipt, when the person's answer was recorded as a decision: "
    "its audit event (<tenant>:<seq>), the proposal's status and version as it left them, "
    "and the tool's status (not_started until the write runs).",
    "properties": {
        "audit_id": _STRING,
        "action_id": _STRING,
        "status": _STRING,
        "version": {"type": "integer"},
        "tool_status": _STRING,
        "duplicate": {"type": "boolean"},
    },
    "required": ["audit_id", "action_id", "status", "version", "tool_status", "duplicate"],
}

_EXECUTION_FIELDS: dict[str, Any] = {
    "execution_id": _STRING,
    "status": {
        "type": "string",
        "enum": [
            "prepared",
            "running",
            "succeeded",
            "failed_retryable",
            "failed_terminal",
            "unknown",
            "needs_attention",
        ],
    },
    "attempts": {"type": "integer"},
    "error_code": _NULLABLE_STRING,
    "receipt": _RECEIPT,
}

PROPOSAL: dict[str, Any] = {
    "type": "object",
    "description": "A frozen proposal and where it stands.",
    "properties": {
        "kind": {"type": "string", "const": "proposal"},
        "proposal_id": _STRING,
        "status": {
            "type": "string",
            "enum": [
                "awaiting_confirmation",
                "declined",
                "changes_requested",
                "cancelled",
                "expired",
                "confirmed",
                "revoked",
                "executing",
                "succeeded",
                "failed_retryable",
                "failed_terminal",
                "unknown",
                "needs_attention",
            ],
        },
        "tool": _STRING,
        "arguments": {"type": "object", "description": "The canonical arguments that were frozen."},
        "args_digest": _STRING,
        "preview": _PREVIEW,
        "risk": {"type": "object"},
        "approval": {"type": "object", "description": "Who must confirm (the tool's policy)."},
        "approvals": {"type": "array", "items": {"type": "object"}},
        "version": {"type": "integer"},
        "created_at": _STRING,
        "expires_at": _STRING,
        "confirm_url": {
            "type": "string",
            "description": "The page where an entitled person signs in and confirms.",
        },
        "confirmation_token": _or_null(
            {"type": "string", "description": "Only for the requesting agent, only once confirmed."}
        ),
        "confirmation": _or_null(
            {
                "type": "object",
                "description": "What happened when the MCP client was asked to confirm.",
                "properties": {
                    "channel": {"type": "string", "enum": ["form", "url"]},
                    "outcome": _STRING,
                    "code": _NULLABLE_STRING,
                    "decision": _DECISION,
                },
                "required": ["channel", "outcome"],
            }
        ),
        "execution": _or_null(
            {
                "type": "object",
                "properties": _EXECUTION_FIELDS,
                "required": ["execution_id", "status"],
            }
        ),
        "changes_requested": _or_null(
            {
                "type": "object",
                "description": "A reviewer's suggestion when status is changes_requested: propose "
                "anew with it (the frozen proposal is never edited).",
                "properties": {"note": _STRING, "fields": {"type": "object"}},
            }
        ),
        "supersedes": _or_null(
            {
                "type": "string",
                "description": "The proposal returned with changes requested that this one "
                "answers.",
            }
        ),
        "next_step": _STRING,
    },
    "required": [
        "kind",
        "proposal_id",
        "status",
        "tool",
        "args_digest",
        "preview",
        "expires_at",
        "confirm_url",
        "confirmation_token",
        "next_step",
    ],
}

EXECUTION: dict[str, Any] = {
    "type": "object",
    "description": "What became of the confirmed write.",
    "properties": {
        "kind": {"type": "string", "const": "execution"},
        "proposal_id": _STRING,
        **_EXECUTION_FIELDS,
        "signed_receipt": _or_null(
            {
                "type": "string",
                "description": "The receipt as a JWS with inclusion proofs (docs/PROOF.md)",
            }
        ),
        "duplicate": {"type": "boolean"},
        "next_step": _STRING,
    },
    "required": ["kind", "proposal_id", "execution_id", "status", "receipt", "next_step"],
}

CLARIFICATION: dict[str, Any] = {
    "type": "object",
    "description": "An argument is ambiguous; ask the person. Nothing was created.",
    "properties": {
        "kind": {"type": "string", "const": "clarification"},
        "code": {"type": "string", "const": "clarification_needed"},
        "question": _STRING,
        "field": _NULLABLE_STRING,
        "tool": _STRING,
        "next_step": _STRING,
    },
    "required": ["kind", "code", "question", "field", "next_step"],
}

REFUSAL: dict[str, Any] = {
    "type": "object",
    "description": "The protocol refused; nothing changed.",
    "properties": {
        "kind": {"type": "string", "const": "refusal"},
        "code": {"type": "string", "description": "Stable machine code, e.g. expired, unknown."},
        "message": _STRING,
        "action": {"type": "string", "enum": list(REFUSAL_ACTIONS)},
        "next_step": _STRING,
        "details": {"type": "object"},
    },
    "required": ["kind", "code", "message", "action", "next_step", "details"],
}


MANDATE: dict[str, Any] = {
    "type": "object",
    "description": "A standing approval: what is left of it, and every write under it.",
    "properties": {
        "kind": {"type": "string", "const": "mandate"},
        "mandate_id": _STRING,
        "status": {
            "type": "string",
            "enum": ["awaiting_confirmation", "active", "declined", "revoked", "expired"],
        },
        "tool": _STRING,
        "constraints": {"type": "object"},
        "approvers": {"type": "array", "items": _STRING},
        "remaining_amount_minor": {"anyOf": [{"type": "integer"}, _NULL]},
        "remaining_count": {"anyOf": [{"type": "integer"}, _NULL]},
        "expires_at": _STRING,
        "ended_reason": _NULLABLE_STRING,
        "writes": {
            "type": "array",
            "description": "Every write under it: held (counted) or returned (did not happen).",
            "items": {
                "type": "object",
                "properties": {
                    "proposal_id": _STRING,
                    "amount_minor": {"anyOf": [{"type": "integer"}, _NULL]},
                    "currency": _NULLABLE_STRING,
                    "budget": {"type": "string", "enum": ["held", "returned"]},
                    "proposal_status": _STRING,
                },
                "required": ["proposal_id", "budget", "proposal_status"],
            },
        },
        "next_step": _STRING,
    },
    "required": ["kind", "mandate_id", "status", "tool", "writes", "next_step"],
}


def one_of(*variants: dict[str, Any]) -> dict[str, Any]:
    """An object schema that is exactly one of the given shapes (an MCP outputSchema root)."""
    return {"type": "object", "oneOf": list(variants)}


REQUEST_OUTPUT = one_of(PROPOSAL, CLARIFICATION, REFUSAL)
EXECUTE_OUTPUT = one_of(EXECUTION, REFUSAL)
STATUS_OUTPUT = one_of(PROPOSAL, REFUSAL)
MANDATE_OUTPUT = one_of(MANDATE, REFUSAL)
