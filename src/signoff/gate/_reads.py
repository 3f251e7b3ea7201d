"""What a caller may read of the gate: only what their circle may see (PROTOCOL rule 12).

Proposals, the inbox, executions, receipts, the audit chain, and the confirmation
token for the one principal it is bound to. Everyone outside a proposal's circle is
told 404, exactly as for another tenant (``gate/_circle.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from signoff._clock import to_micros
from signoff._model import Execution, Principal, Proposal, ProposalStatus, Receipt
from signoff.audit._chain import AuditEvent
from signoff.exceptions import (
    InvalidRequest,
    InvalidState,
    NotEntitled,
    NotFound,
    SubjectMismatch,
    TokenExpired,
)
from signoff.gate._circle import circle_of, load_visible, load_visible_execution
from signoff.gate._context import GateContext, check_text
from signoff.gate._policy import is_requester
from signoff.gate._receipts import receipt_for
from signoff.gate._refusals import audited
from signoff.gate._signed import handed_token
from signoff.gate._signed_receipt import signed_receipt
from signoff.store._base import Store

MAX_PAGE = 500


class GateReads:
    """The read half of :class:`~signoff.Gate` (a mixin: ``store`` and ``_ctx`` are the gate's)."""

    store: Store
    _ctx: GateContext

    def proposal(self, principal: Principal, proposal_id: str) -> Proposal:
        with self.store.read() as tx:
            return load_visible(tx, principal, proposal_id, self._ctx.directory_in(tx))

    def proposals(
        self, principal: Principal, *, statuses: Sequence[ProposalStatus] = (), limit: int = 100
    ) -> list[Proposal]:
        """Newest first: what the caller may see of their tenant."""
        _check_limit(limit)
        with self.store.read() as tx:
            circle = circle_of(principal, self._ctx.directory_in(tx))
            return tx.proposals(
                principal.tenant, statuses=[s.value for s in statuses], limit=limit, circle=circle
            )

    def inbox(
        self,
        principal: Principal,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[Proposal]:
        """Proposals awaiting a decision this person may take, oldest deadline first.

        ``after`` is ``(expires_at, proposal_id)`` of the previous page's last item.
        """
        _check_limit(limit)
        if principal.is_agent:
            return []
        if after is not None:
            check_text(after=after[1])
        cursor = None if after is None else (to_micros(after[0]), after[1])
        with self.store.read() as tx:
            roles = circle_of(principal, self._ctx.directory_in(tx)).roles
            return tx.decidable_proposals(
                principal.tenant,
                principal.subject,
                roles,
                now=self._ctx.now_micros(),
                after=cursor,
                limit=limit,
            )

    def execution(self, principal: Principal, execution_id: str) -> Execution:
        with self.store.read() as tx:
            return load_visible_execution(tx, principal, execution_id, self._ctx.directory_in(tx))[
                1
            ]

    def execution_for(self, principal: Principal, proposal_id: str) -> Execution | None:
        with self.store.read() as tx:
            load_visible(tx, principal, proposal_id, self._ctx.directory_in(tx))
            return tx.execution_for_proposal(proposal_id)

    def receipt(self, principal: Principal, execution_id: str) -> Receipt:
        with self.store.read() as tx:
            proposal, execution = load_visible_execution(
                tx, principal, execution_id, self._ctx.directory_in(tx)
            )
        return receipt_for(proposal, execution)

    def signed_receipt(self, principal: Principal, execution_id: str) -> str | None:
        """The execution's receipt as a JWS with inclusion proofs; None unsigned or not yet."""
        execution = self.execution(principal, execution_id)
        if not execution.status.is_terminal:
            return None
        return signed_receipt(self._ctx, execution.tenant, execution.proposal_id, execution_id)

    def receipt_file(self, principal: Principal, execution_id: str) -> dict[str, Any]:
        """The signed receipt as the file a person keeps and checks offline
        (``signoff audit verify --receipt FILE --trust FILE``); NotFound while there is none."""
        from signoff.proof._verify_receipt import receipt_file

        signed = self.signed_receipt(principal, execution_id)
        if signed is None:
            raise NotFound(
                "no signed receipt for this execution yet — it is signed once the execution"
                " finished and a checkpoint holds it (the deployment signs receipts)",
                execution_id=execution_id,
            )
        return receipt_file(signed, execution_id)

    def signed_receipt_for(self, tenant: str, proposal_id: str, execution_id: str) -> str | None:
        """The signed receipt, for the deployment's own senders (the receipt e-mails)."""
        return signed_receipt(self._ctx, tenant, proposal_id, execution_id)

    def confirmation_token(self, principal: Principal, proposal_id: str) -> str:
        """Hand the token again to the one principal it is bound to (e.g. an agent)."""
        return audited(
            self._ctx,
            "confirmation_token",
            principal,
            lambda: self._token_for(principal, proposal_id),
            proposal_id=proposal_id,
        )

    def _token_for(self, principal: Principal, proposal_id: str) -> str:
        with self.store.read() as tx:
            proposal = load_visible(tx, principal, proposal_id, self._ctx.directory_in(tx))
            if proposal.requester_actor != principal.actor or not is_requester(proposal, principal):
                raise SubjectMismatch("the token is bound to the requesting principal")
            if proposal.status is not ProposalStatus.CONFIRMED:
                raise InvalidState(
                    f"the proposal is {proposal.status.value}; no token is available",
                    proposal_id=proposal_id,
                    status=proposal.status.value,
                )
            if self._ctx.now_micros() >= to_micros(proposal.expires_at):
                # The token's expiry is the proposal's: an expired one is never handed out.
                raise TokenExpired(
                    "this confirmation expired; ask for a new proposal", proposal_id=proposal_id
                )
            token_id = tx.token_id_for(proposal_id)
            assert token_id is not None
            return handed_token(self._ctx, tx, token_id)

    def audit_events(
        self,
        principal: Principal,
        *,
        proposal_id: str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        """The tenant's chain for its auditors and admins; one proposal's events for its circle.

        ``after`` (a ``seq``) and ``limit`` read it a page at a time, in chain order.
        """
        if limit is not None:
            _check_limit(limit)
        with self.store.read() as tx:
            directory = self._ctx.directory_in(tx)
            if proposal_id is not None:
                load_visible(tx, principal, proposal_id, directory)
            elif not circle_of(principal, directory).whole_tenant:
                raise NotEntitled("reading the whole audit log needs the auditor or admin role")
            return tx.audit_events(
                tenant=principal.tenant, proposal_id=proposal_id, after=after, limit=limit
            )


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_PAGE:
        raise InvalidRequest(f"limit must be 1 to {MAX_PAGE}")
