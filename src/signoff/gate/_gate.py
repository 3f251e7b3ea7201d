"""The Gate: the one object an edge talks to."""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from signoff._clock import Clock, RandomSource, SystemClock, SystemRandom, to_micros
from signoff._directory import RoleDirectory, TransactionalDirectory
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
from signoff.exceptions import InvalidRequest, InvalidState, NotEntitled, SubjectMismatch
from signoff.gate import (
    _decide,
    _device,
    _execute,
    _export,
    _lifecycle,
    _propose,
    _reconcile,
    _resolve,
)
from signoff.gate._circle import circle_of, load_visible, load_visible_execution
from signoff.gate._context import GateContext
from signoff.gate._hooks import ExecutionHooks, no_hooks
from signoff.gate._receipts import receipt_for
from signoff.gate._reconcile import Reconciled
from signoff.gate._refusals import audited, presented_hash
from signoff.gate._signed import handed_token
from signoff.gate._signed_receipt import signed_receipt, with_signed_receipt
from signoff.store._base import Store
from signoff.store._sql import PasskeyRecord

if TYPE_CHECKING:
    from signoff.gate._proof import GateProof

MAX_PAGE = 500


class Gate:
    """Propose, decide, execute: PROTOCOL.md as method calls.

    ``token_key`` (≥ 32 bytes) derives confirmation tokens; keep it secret and
    stable across restarts, or tokens issued before a restart cannot be
    handed out again (they still verify: only their hash is compared).
    ``directory`` is where roles are checked *now* (PROTOCOL rule 11); without
    one, the roles in the caller's identity token are trusted until it expires.
    ``surfaces`` lists where decisions may come from (rule 14); empty allows any.
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
        surfaces: Sequence[str] = (),
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
            surfaces=tuple(surfaces),
            proof=proof,
            directory_in_store=isinstance(directory, TransactionalDirectory),
        )

    @property
    def clock(self) -> Clock:
        return self._ctx.clock

    @property
    def proof(self) -> GateProof | None:
        """What this gate signs with (keys, token forms, checkpoints), if anything."""
        return self._ctx.proof

    @property
    def directory(self) -> RoleDirectory | None:
        return self._ctx.directory

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
        """Record an approval or rejection; once all approvals are in, a token is issued.

        ``confirmation_token`` in the result is for the application that runs the
        gate in-process; the edges never show it to the person who decided.
        """
        return audited(
            self._ctx,
            "decide",
            principal,
            lambda: _decide.decide(
                self._ctx, principal, proposal_id, decision, idempotency_key=idempotency_key
            ),
            proposal_id=proposal_id,
            presented={
                "decision": decision.kind.value,
                "expected_version": decision.expected_version,
                "idempotency_key_sha256": presented_hash("idempotency_key", idempotency_key),
            },
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
        result = audited(
            self._ctx,
            "execute",
            principal,
            lambda: _execute.execute(
                self._ctx,
                principal,
                proposal_id,
                confirmation_token,
                idempotency_key=idempotency_key,
            ),
            proposal_id=proposal_id,
            presented={
                "token_sha256": presented_hash("token", confirmation_token),
                "idempotency_key_sha256": presented_hash("idempotency_key", idempotency_key),
            },
        )
        return with_signed_receipt(self._ctx, result)

    def retry(self, principal: Principal, execution_id: str) -> ExecutionResult:
        result = audited(
            self._ctx,
            "retry",
            principal,
            lambda: _reconcile.retry(self._ctx, principal, execution_id),
            execution_id=execution_id,
        )
        return with_signed_receipt(self._ctx, result)

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
        result = audited(
            self._ctx,
            "resolve",
            principal,
            lambda: _resolve.resolve(
                self._ctx,
                principal,
                execution_id,
                outcome=outcome,
                provider_reference=provider_reference,
                reason=reason,
            ),
            execution_id=execution_id,
        )
        return with_signed_receipt(self._ctx, result)

    def stop(self, principal: Principal, execution_id: str, *, reason: str) -> ExecutionResult:
        """A person who may withdraw the confirmation ends a ``failed_retryable`` execution."""
        result = audited(
            self._ctx,
            "stop",
            principal,
            lambda: _resolve.stop(self._ctx, principal, execution_id, reason=reason),
            execution_id=execution_id,
        )
        return with_signed_receipt(self._ctx, result)

    def revoke(self, principal: Principal, proposal_id: str, *, reason: str) -> Proposal:
        return audited(
            self._ctx,
            "revoke",
            principal,
            lambda: _lifecycle.revoke(self._ctx, principal, proposal_id, reason=reason),
            proposal_id=proposal_id,
        )

    def cancel(self, principal: Principal, proposal_id: str) -> Proposal:
        return audited(
            self._ctx,
            "cancel",
            principal,
            lambda: _lifecycle.cancel(self._ctx, principal, proposal_id),
            proposal_id=proposal_id,
        )

    def expire_due(self) -> int:
        return _lifecycle.expire_due(self._ctx)

    # Reads: only what the caller's circle may see (PROTOCOL rule 12) -------------

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

    def register_passkey(
        self,
        principal: Principal,
        *,
        credential_id: str,
        public_key: str,
        public_jwk: dict[str, Any],
        sign_count: int,
    ) -> PasskeyRecord:
        """Keep a passkey the page verified (py_webauthn); recorded in the audit chain."""
        return _device.register_passkey(
            self._ctx,
            principal,
            credential_id=credential_id,
            public_key=public_key,
            public_jwk=public_jwk,
            sign_count=sign_count,
        )

    def passkeys(self, principal: Principal) -> list[PasskeyRecord]:
        """The passkeys this person enrolled in their tenant."""
        with self.store.read() as tx:
            return tx.passkeys_of(principal.tenant, principal.subject)

    def signed_receipt(self, principal: Principal, execution_id: str) -> str | None:
        """The execution's receipt as a JWS with inclusion proofs; None unsigned or not yet."""
        execution = self.execution(principal, execution_id)
        if not execution.status.is_terminal:
            return None
        return signed_receipt(self._ctx, execution.tenant, execution.proposal_id, execution_id)

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
        """The tenant's chain for its auditors and admins; one proposal's events for its circle."""
        with self.store.read() as tx:
            directory = self._ctx.directory_in(tx)
            if proposal_id is not None:
                load_visible(tx, principal, proposal_id, directory)
            elif not circle_of(principal, directory).whole_tenant:
                raise NotEntitled("reading the whole audit log needs the auditor or admin role")
            return tx.audit_events(tenant=principal.tenant, proposal_id=proposal_id)

    def verify_audit(self) -> ChainReport:
        return verify_audit(self.store)

    def export_bundle(self, tenant: str, *, since: int = 0) -> dict[str, Any]:
        """One tenant's log as an offline-verifiable bundle (docs/PROOF.md); needs ``proof``."""
        return _export.export_bundle(self._ctx, tenant, since=since)


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 0 < limit <= MAX_PAGE:
        raise InvalidRequest(f"limit must be 1 to {MAX_PAGE}")


def verify_audit(store: Store) -> ChainReport:
    """Walk every tenant's audit chain from genesis to its head."""
    with store.read() as tx:
        return verify_chain(tx.audit_events(), tx.audit_heads())
