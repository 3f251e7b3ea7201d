"""A typed synchronous client for the signoff HTTP API, on httpx.

Every problem answer is raised as the same typed error the server raised
(``signoff.exceptions``, looked up by the problem's ``code``), with the
problem's extension members as details. Writes carry an Idempotency-Key; a
lost connection is retried with the *same* key, so a retry never runs twice.
When no answer comes at all, :class:`~signoff.exceptions.OutcomeUnknown` is
raised: ask for the status of the proposal, never propose again.

    with SignoffClient("http://127.0.0.1:8000", token=agent_jwt) as agent:
        proposal = agent.propose("refund_order", {...})
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel

from signoff import exceptions
from signoff.http._views import (
    AuditEventView,
    AuditLog,
    ConfirmationTokenView,
    DecisionView,
    DemoOrderView,
    ExecutionOutcomeView,
    ExecutionStatusView,
    Ledger,
    LedgerEntryView,
    ProposalList,
    ProposalView,
    WhoAmI,
)

__all__ = ["SignoffClient", "confirmation_idempotency_key", "error_from_problem"]

M = TypeVar("M", bound=BaseModel)
_BY_STATUS: dict[int, type[exceptions.SignoffError]] = {
    400: exceptions.InvalidRequest,
    401: exceptions.NotAuthenticated,
    403: exceptions.Forbidden,
    404: exceptions.NotFound,
    409: exceptions.Conflict,
    422: exceptions.Refusal,
    503: exceptions.OutcomeUnknown,
}


def _codes() -> dict[str, type[exceptions.SignoffError]]:
    found: dict[str, type[exceptions.SignoffError]] = {}
    pending: list[type[exceptions.SignoffError]] = [exceptions.SignoffError]
    while pending:
        cls = pending.pop()
        found.setdefault(cls.code, cls)
        pending.extend(cls.__subclasses__())
    return found


_BY_CODE = _codes()
CONFIRMATION_KEY_PREFIX = "confirm:v1:"


def confirmation_idempotency_key(proposal_id: str, version: int) -> str:
    """``confirm:v1:`` + hex SHA-256 of the length-prefixed proposal id and version.

    Each field is a 4-byte big-endian byte length followed by its UTF-8 bytes (the
    version in decimal), so no id, however many ``:`` it holds, collides with another
    pair. The same key on every retry of one person's decision on one version; the
    Java client derives the same bytes (docs/CLIENTS.md).
    """
    if not proposal_id or isinstance(version, bool) or version < 1:
        raise ValueError("a proposal id and a version >= 1 are required")
    digest = hashlib.sha256()
    for field in (proposal_id.encode("utf-8"), str(version).encode("ascii")):
        digest.update(len(field).to_bytes(4, "big"))
        digest.update(field)
    return CONFIRMATION_KEY_PREFIX + digest.hexdigest()


def error_from_problem(status: int, problem: Mapping[str, Any]) -> exceptions.SignoffError:
    """The typed error for a problem+json answer (by ``code``, else by HTTP status)."""
    code = problem.get("code")
    cls = _BY_CODE.get(code) if isinstance(code, str) else None
    if cls is None:
        cls = _BY_STATUS.get(status, exceptions.SignoffError)
    reserved = {"type", "title", "detail", "status", "code", "instance"}
    details = {k: v for k, v in problem.items() if k not in reserved}
    message = str(problem.get("detail") or f"HTTP {status}")
    return cls(message, http_status=status, problem_code=code, **details)


class SignoffClient:
    """One caller (one bearer token) talking to one signoff server."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        retries: int = 2,
        http: httpx.Client | None = None,
    ) -> None:
        self._owns_http = http is None
        self._http = http or httpx.Client(base_url=base_url, timeout=timeout)
        self._token = token
        self._retries = retries

    def __enter__(self) -> SignoffClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def as_caller(self, token: str) -> SignoffClient:
        """Another caller on the same connection pool (e.g. the approver)."""
        return SignoffClient(
            str(self._http.base_url), token, retries=self._retries, http=self._http
        )

    def whoami(self) -> WhoAmI:
        return self._call("GET", "/v1/whoami", WhoAmI)

    def propose(
        self, tool: str, arguments: Mapping[str, Any], *, rationale: str | None = None
    ) -> ProposalView:
        body = {"tool": tool, "arguments": dict(arguments), "rationale": rationale}
        # Proposing twice makes two proposals: never retried automatically.
        return self._call("POST", "/v1/proposals", ProposalView, json=body, retry=False)

    def proposals(self, *, status: Sequence[str] = (), limit: int = 100) -> list[ProposalView]:
        params: list[tuple[str, str | int]] = [("status", s) for s in status]
        params.append(("limit", limit))
        return self._call("GET", "/v1/proposals", ProposalList, params=params).proposals

    def proposal(self, proposal_id: str) -> ProposalView:
        return self._call("GET", f"/v1/proposals/{proposal_id}", ProposalView)

    def decide(
        self,
        proposal_id: str,
        decision: Literal["approve", "reject"],
        *,
        expected_version: int,
        idempotency_key: str | None = None,
        reason_code: str | None = None,
        reason: str | None = None,
        retyped: Mapping[str, str] | None = None,
    ) -> DecisionView:
        body = {
            "decision": decision,
            "expected_version": expected_version,
            "reason_code": reason_code,
            "reason": reason,
            "retyped": None if retyped is None else dict(retyped),
        }
        return self._call(
            "POST",
            f"/v1/proposals/{proposal_id}/decision",
            DecisionView,
            json=body,
            key=idempotency_key or _new_key(),
        )

    def approve(
        self,
        proposal: ProposalView,
        *,
        idempotency_key: str | None = None,
        retyped: Mapping[str, str] | None = None,
    ) -> DecisionView:
        """Approve exactly the version you were shown."""
        return self.decide(
            proposal.proposal_id,
            "approve",
            expected_version=proposal.version,
            idempotency_key=idempotency_key,
            retyped=retyped,
        )

    def reject(
        self,
        proposal: ProposalView,
        reason_code: str,
        *,
        reason: str | None = None,
        idempotency_key: str | None = None,
    ) -> DecisionView:
        return self.decide(
            proposal.proposal_id,
            "reject",
            expected_version=proposal.version,
            reason_code=reason_code,
            reason=reason,
            idempotency_key=idempotency_key,
        )

    def execute(
        self, proposal_id: str, confirmation_token: str, *, idempotency_key: str | None = None
    ) -> ExecutionOutcomeView:
        """Run the confirmed write; ``execution.status`` may still be running or unknown."""
        body = {"proposal_id": proposal_id, "confirmation_token": confirmation_token}
        return self._call(
            "POST",
            "/v1/executions",
            ExecutionOutcomeView,
            json=body,
            key=idempotency_key or _new_key(),
        )

    def execution(self, execution_id: str) -> ExecutionStatusView:
        return self._call("GET", f"/v1/executions/{execution_id}", ExecutionStatusView)

    def retry(self, execution_id: str) -> ExecutionOutcomeView:
        """Ask again; the provider sees the same request key (safe to repeat)."""
        return self._call("POST", f"/v1/executions/{execution_id}/retry", ExecutionOutcomeView)

    def confirmation_token(self, proposal_id: str) -> str:
        """Pick up the token after a person approved (only the requesting principal can)."""
        path = f"/v1/proposals/{proposal_id}/confirmation-token"
        return self._call("GET", path, ConfirmationTokenView).confirmation_token

    def revoke(self, proposal_id: str, reason: str) -> ProposalView:
        path = f"/v1/proposals/{proposal_id}/revoke"
        return self._call("POST", path, ProposalView, json={"reason": reason}, retry=False)

    def cancel(self, proposal_id: str) -> ProposalView:
        path = f"/v1/proposals/{proposal_id}/cancel"
        return self._call("POST", path, ProposalView, retry=False)

    def audit(self, *, proposal_id: str | None = None) -> list[AuditEventView]:
        """Every event (of one proposal, if named), following the pages in chain order."""
        params: dict[str, Any] = {} if proposal_id is None else {"proposal_id": proposal_id}
        events: list[AuditEventView] = []
        while True:
            page = self._call("GET", "/v1/audit", AuditLog, params=params)
            events.extend(page.events)
            if page.next_after is None:
                return events
            params = {**params, "after": page.next_after}

    def demo_order(self, order_id: str) -> DemoOrderView:
        return self._call("GET", f"/v1/demo/orders/{order_id}", DemoOrderView)

    def demo_ledger(self) -> list[LedgerEntryView]:
        return self._call("GET", "/v1/demo/provider/ledger", Ledger).entries

    def _call(
        self,
        method: str,
        path: str,
        model: type[M],
        *,
        json: Any = None,
        params: Any = None,
        key: str | None = None,
        retry: bool = True,
    ) -> M:
        headers = {"Authorization": f"Bearer {self._token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        attempts = 1 + (self._retries if retry else 0)
        for attempt in range(1, attempts + 1):
            try:
                response = self._http.request(
                    method, path, json=json, params=params, headers=headers
                )
                break
            except httpx.TransportError as exc:
                if attempt == attempts:
                    raise exceptions.OutcomeUnknown(
                        f"no answer from the server for {method} {path}; ask for the status "
                        "before trying again",
                        reason=type(exc).__name__,
                    ) from exc
        if response.status_code >= 400:
            raise error_from_problem(response.status_code, _problem_body(response))
        return model.model_validate(response.json())


def _problem_body(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {"detail": response.text[:200]}
    return body if isinstance(body, dict) else {"detail": str(body)[:200]}


def _new_key() -> str:
    return uuid.uuid4().hex
