"""The Gate: the one object an edge talks to."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from signoff._clock import Clock, RandomSource, SystemClock, SystemRandom
from signoff._directory import RoleDirectory
from signoff._model import (
    Decision,
    DecisionResult,
    Execution,
    ExecutionResult,
    Principal,
    Proposal,
    ProposalStatus,
    Receipt,
)
from signoff._tokens import TokenMinter
from signoff.audit._chain import AuditEvent, ChainReport, verify_chain
from signoff.catalog._catalog import Catalog
from signoff.exceptions import InvalidState, NotFound, SubjectMismatch
from signoff.gate import _decide, _execute, _export, _lifecycle, _propose, _reconcile, _resolve
from signoff.gate._context import GateContext, load_proposal
from signoff.gate._hooks import ExecutionHooks, no_hooks
from signoff.gate._receipts import receipt_for
from signoff.gate._reconcile import Reconciled
from signoff.gate._signed import handed_token
from signoff.gate._signed_receipt import signed_receipt, with_signed_receipt
from signoff.store._base import Store

if TYPE_CHECKING:
    from signoff.gate._proof import GateProof


class Gate:
    """Propose, decide, execute: PROTOCOL.md as method calls.

    ``token_key`` (≥ 32 bytes) derives confirmation tokens; keep it secret and
    stable across restarts, or tokens issued before a restart cannot be
    handed out again (they still verify: only their hash is compared).
    """

    def __init__(
        self,
        catalog: Catalog,
        store: Store,
        *,
        token_key: bytes | None = None,
        audience: str = "signoff",
        clock: Clock | None = None,
        random: RandomSource | None = None,
        directory: RoleDirectory | None = None,
        lease: timedelta = timedelta(minutes=5),
        hooks: ExecutionHooks | None = None,
        proof: GateProof | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        self._ctx = GateContext(
            catalog=catalog,
            store=store,
            clock=clock or SystemClock(),
            minter=TokenMinter(token_key or secrets.token_bytes(32), random or SystemRandom()),
            directory=directory,
            audience=audience,
            lease=lease,
            hooks=hooks or no_hooks,
            proof=proof,
        )

    @property
    def clock(self) -> Clock:
        return self._ctx.clock

    @property
    def proof(self) -> GateProof | None:
        """What this gate signs with (keys, token forms, checkpoints), if anything."""
        return self._ctx.proof

    def propose(
        self,
        principal: Principal,
        tool: str,
        arguments: Mapping[str, Any] | str | bytes,
        *,
        rationale: str | None = None,
    ) -> Proposal:
        """Freeze a write request into a proposal awaiting confirmation."""
        return _propose.propose(self._ctx, principal, tool, arguments, rationale=rationale)

    def decide(
        self,
        principal: Principal,
        proposal_id: str,
        decision: Decision,
        *,
        idempotency_key: str,
    ) -> DecisionResult:
        """Record an approval or rejection; returns the token once all approvals are in."""
        return _decide.decide(
            self._ctx, principal, proposal_id, decision, idempotency_key=idempotency_key
        )

    def execute(
        self,
        principal: Principal,
        proposal_id: str,
        confirmation_token: str,
        *,
        idempotency_key: str | None = None,
    ) -> ExecutionResult:
        """Consume the token and perform the confirmed write once."""
        result = _execute.execute(
            self._ctx, principal, proposal_id, confirmation_token, idempotency_key=idempotency_key
        )
        return with_signed_receipt(self._ctx, result)

    def retry(self, principal: Principal, execution_id: str) -> ExecutionResult:
        return with_signed_receipt(self._ctx, _reconcile.retry(self._ctx, principal, execution_id))

    def reconcile(
        self, *, older_than: timedelta = timedelta(0), limit: int = 100
    ) -> list[Reconciled]:
        return _reconcile.reconcile(self._ctx, older_than=older_than, limit=limit)

    def resolve(
        self,
        principal: Principal,
        execution_id: str,
        *,
        outcome: Literal["succeeded", "failed_terminal"],
        provider_reference: str | None = None,
        reason: str,
    ) -> ExecutionResult:
        """A person (``signoff_admin``) records what the provider shows for a stuck execution."""
        result = _resolve.resolve(
            self._ctx,
            principal,
            execution_id,
            outcome=outcome,
            provider_reference=provider_reference,
            reason=reason,
        )
        return with_signed_receipt(self._ctx, result)

    def revoke(self, principal: Principal, proposal_id: str, *, reason: str) -> Proposal:
        return _lifecycle.revoke(self._ctx, principal, proposal_id, reason=reason)

    def cancel(self, principal: Principal, proposal_id: str) -> Proposal:
        return _lifecycle.cancel(self._ctx, principal, proposal_id)

    def expire_due(self) -> int:
        return _lifecycle.expire_due(self._ctx)

    def proposal(self, principal: Principal, proposal_id: str) -> Proposal:
        with self.store.read() as tx:
            return load_proposal(tx, principal, proposal_id)

    def proposals(
        self, principal: Principal, *, statuses: Sequence[ProposalStatus] = (), limit: int = 100
    ) -> list[Proposal]:
        with self.store.read() as tx:
            return tx.proposals(principal.tenant, statuses=[s.value for s in statuses], limit=limit)

    def execution(self, principal: Principal, execution_id: str) -> Execution:
        with self.store.read() as tx:
            execution = tx.execution(principal.tenant, execution_id)
        if execution is None:
            raise NotFound("no such execution", execution_id=execution_id)
        return execution

    def execution_for(self, principal: Principal, proposal_id: str) -> Execution | None:
        with self.store.read() as tx:
            load_proposal(tx, principal, proposal_id)
            return tx.execution_for_proposal(proposal_id)

    def receipt(self, principal: Principal, execution_id: str) -> Receipt:
        execution = self.execution(principal, execution_id)
        return receipt_for(self.proposal(principal, execution.proposal_id), execution)

    def signed_receipt(self, principal: Principal, execution_id: str) -> str | None:
        """The execution's receipt as a JWS with inclusion proofs; None unsigned or not yet."""
        execution = self.execution(principal, execution_id)
        if not execution.status.is_terminal:
            return None
        return signed_receipt(self._ctx, execution.tenant, execution.proposal_id, execution_id)

    def confirmation_token(self, principal: Principal, proposal_id: str) -> str:
        """Hand the token again to the one principal it is bound to (e.g. an agent)."""
        with self.store.read() as tx:
            proposal = load_proposal(tx, principal, proposal_id)
            if (proposal.requester_subject, proposal.requester_actor) != (
                principal.subject,
                principal.actor,
            ):
                raise SubjectMismatch("the token is bound to the requesting principal")
            if proposal.status is not ProposalStatus.CONFIRMED:
                raise InvalidState(
                    f"the proposal is {proposal.status.value}; no token is available",
                    proposal_id=proposal_id,
                    status=proposal.status.value,
                )
            token_id = tx.token_id_for(proposal_id)
            assert token_id is not None
            return handed_token(self._ctx, tx, token_id)

    def audit_events(
        self, principal: Principal, *, proposal_id: str | None = None
    ) -> list[AuditEvent]:
        with self.store.read() as tx:
            return tx.audit_events(tenant=principal.tenant, proposal_id=proposal_id)

    def verify_audit(self) -> ChainReport:
        return verify_audit(self.store)

    def export_bundle(self, tenant: str, *, since: int = 0) -> dict[str, Any]:
        """One tenant's log as an offline-verifiable bundle (docs/PROOF.md); needs ``proof``."""
        return _export.export_bundle(self._ctx, tenant, since=since)


def verify_audit(store: Store) -> ChainReport:
    """Walk every tenant's audit chain from genesis to its head."""
    with store.read() as tx:
        return verify_chain(tx.audit_events(), tx.audit_heads())
