"""The served OpenAPI 3.1 document: every error response is a problem+json ``Problem``.

Every route names a stable camelCase ``operationId`` in its decorator, so generated
clients get ``decideProposal``, not ``decide_v1_proposals__proposal_id__decision_post``.
The document ``signoff serve`` serves is checked in as ``openapi.json`` (see
:mod:`signoff.http._contract`).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from signoff import exceptions
from signoff.http._problems import _HTTP_CODES, PROBLEM_MEDIA_TYPE, UNAVAILABLE, Problem

_DESCRIPTIONS = {
    400: "Malformed request, schema violation, unknown field or missing Idempotency-Key",
    401: "Bearer token missing, invalid or expired",
    403: "Wrong role, separation of duties, wrong subject, audience or approval surface",
    404: "No such resource in the caller's tenant",
    409: "State or version conflict, expired, consumed, revoked, or key in flight",
    405: "This path does not take that method; Allow lists the ones it does",
    413: "The request body is larger than SIGNOFF_MAX_BODY_BYTES",
    422: "Clarification needed, re-typed value differs, or Idempotency-Key reused",
    429: "Too many proposals from this agent; wait Retry-After seconds",
    503: "Store or provider unavailable and no outcome is known; ask for the status",
}
_HEADERS: dict[int, dict[str, Any]] = {
    405: {
        "Allow": {
            "description": "Every method this path takes (RFC 9110 §15.5.6)",
            "schema": {"type": "string"},
        }
    },
    401: {
        "WWW-Authenticate": {
            "description": "Bearer challenge (RFC 6750)",
            "schema": {"type": "string"},
        }
    },
    503: {
        "Retry-After": {
            "description": "Seconds to wait before asking again, with the same Idempotency-Key",
            "schema": {"type": "integer"},
        }
    },
}


def problems(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: each status answers a Problem (503 always may)."""
    return {status: _problem_response(status) for status in sorted({*statuses, 503})}


def _problem_response(status: int) -> dict[str, Any]:
    codes = ", ".join(f"`{code}`" for code in problem_codes(status))
    response: dict[str, Any] = {
        "model": Problem,
        "description": f"{_DESCRIPTIONS[status]}. Codes: {codes}",
    }
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response


def problem_codes(status: int) -> list[str]:
    """The stable ``code`` values a problem of this HTTP status can carry, sorted."""
    codes = {code for code_status, code in _HTTP_CODES.items() if code_status == status}
    refusals = [v for v in vars(exceptions).values() if isinstance(v, type)]
    codes.update(
        cls.code
        for cls in refusals
        if issubclass(cls, exceptions.SignoffError) and cls.status == status
    )
    if status == 503:
        codes.add(UNAVAILABLE)  # anything unexpected: the outcome is unknown
    return sorted(codes)


_LOCATION = {
    "Location": {
        "description": "Where to read what was created or is still running",
        "schema": {"type": "string", "format": "uri-reference"},
    }
}


_BY_PROPOSAL = {"proposal_id": "$response.body#/proposal_id"}
_BY_EXECUTION = {"execution_id": "$response.body#/execution/execution_id"}
# OpenAPI links: where an answer's ids lead (generators document them; Schemathesis's
# stateful tests follow them from a created proposal to its decision and execution).
_LINKS: dict[tuple[str, str], dict[str, str]] = {
    ("createProposal", "201"): {
        "getProposal": "The proposal just created",
        "decideProposal": "Approve or reject it",
        "getConfirmationToken": "Pick up the token once a person approved",
        "cancelProposal": "Withdraw the request",
        "revokeProposal": "Withdraw a confirmation",
    },
    ("executeProposal", "200"): {
        "getExecution": "The execution and its receipt",
        "resolveExecution": "Record what the provider shows",
    },
    ("executeProposal", "202"): {
        "getExecution": "Poll until the outcome is known",
        "retryExecution": "Ask again with the same request key",
        "stopExecution": "End a failed_retryable execution",
    },
}


def _links(operation_id: str, status: str) -> dict[str, Any]:
    """The ``links`` of one response: each target operation with the id it takes."""
    targets = _LINKS.get((operation_id, status), {})
    parameters = _BY_PROPOSAL if operation_id == "createProposal" else _BY_EXECUTION
    return {
        name: {"operationId": name, "parameters": dict(parameters), "description": text}
        for name, text in targets.items()
    }


def install_openapi(app: FastAPI, *, server_url: str) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                description=app.description,
                routes=app.routes,
                servers=[{"url": server_url, "description": "This signoff server"}],
            )
            app.openapi_schema = _every_answer(_problem_media_types(document))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _every_answer(document: dict[str, Any]) -> dict[str, Any]:
    """What every operation may answer besides its own: 405 for another method of its
    path, 413 for an oversized body, and the Location of a 201 or 202."""
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            extra = [405, 413] if "requestBody" in operation else [405]
            for code in extra:
                responses.setdefault(str(code), _problem_json(code))
            for created in ("201", "202"):
                if created in responses:
                    responses[created].setdefault("headers", {}).update(_LOCATION)
            for status, response in responses.items():
                links = _links(operation.get("operationId", ""), status)
                if links:
                    response["links"] = links
            operation["responses"] = dict(sorted(responses.items()))
    return document


def _problem_json(status: int) -> dict[str, Any]:
    response = _problem_response(status)
    del response["model"]
    response["content"] = {PROBLEM_MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    return response


def _problem_media_types(document: dict[str, Any]) -> dict[str, Any]:
    """Errors are problem+json; FastAPI's own 422 validation answer does not exist here."""
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.get("responses", {})
            for status, response in list(responses.items()):
                content = response.get("content", {})
                schema = content.get("application/json", {}).get("schema", {})
                if status == "422" and "HTTPValidationError" in str(schema):
                    del responses[status]
                elif status.isdigit() and int(status) >= 400 and "application/json" in content:
                    response["content"] = {PROBLEM_MEDIA_TYPE: content["application/json"]}
    schemas = document.get("components", {}).get("schemas", {})
    schemas.pop("HTTPValidationError", None)
    schemas.pop("ValidationError", None)
    return document
