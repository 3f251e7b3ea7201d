"""``AsyncGate``: the Gate's methods as coroutines, on the one code path of :class:`Gate`.

Every guarantee (single-winner updates, the audit chain, no provider call
inside a transaction) lives in the sync gate. The stores are sync (sqlite3,
a psycopg pool), so an async caller hands each call to a worker thread; this
class makes that hand-off explicit and bounded instead of copying the gate.
A call not yet started when its awaiting task is cancelled never runs; a call
already running finishes in its thread and its outcome is recorded as usual.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, ParamSpec, TypeVar

from signoff._clock import Clock
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
from signoff.audit._chain import AuditEvent, ChainReport
from signoff.catalog._catalog import Catalog
from signoff.exceptions import SignerRefused
from signoff.gate._batch import BatchItem, BatchOutcome
from signoff.gate._followups import FollowupPass
from signoff.gate._gate import Gate
from signoff.gate._mandate import MandateState
from signoff.gate._reconcile import Reconciled
from signoff.store._base import Store
from signoff.store._q_followups import Assignment
from signoff.store._sql import CheckpointRecord, PasskeyRecord

if TYPE_CHECKING:
    from signoff.identity._ciba import CibaPending

P = ParamSpec("P")
T = TypeVar("T")
DEFAULT_MAX_THREADS = 16


class AsyncGate:
    """Await the :class:`Gate`: the same methods, each run in a bounded pool of worker threads.

    ``max_threads`` bounds how many gate calls run at once (size it to the
    store: a PostgreSQL pool's ``max_size`` is a good value). Close it (or use
    ``async with``) to stop its threads; the wrapped gate and store stay open.
    """

    def __init__(self, gate: Gate, *, max_threads: int = DEFAULT_MAX_THREADS) -> None:
        if max_threads < 1:
            raise ValueError("max_threads must be at least 1")
        self.gate = gate
        self.max_threads = max_threads
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    @property
    def catalog(self) -> Catalog:
        return self.gate.catalog

    @property
    def store(self) -> Store:
        return self.gate.store

    @property
    def clock(self) -> Clock:
        return self.gate.clock

    async def run_sync(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``function`` (sync code that uses the gate) in the pool, with this task's context."""
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, function, *args, **kwargs)
        return await loop.run_in_executor(self._threads(), call)

    def _threads(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(
                    max_workers=self.max_threads, thread_name_prefix="signoff-gate"
                )
            return self._pool

    def close(self) -> None:
        """Wait for running calls, then stop the threads (a later call starts new ones)."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)

    async def __aenter__(self) -> AsyncGate:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def propose(
        self,
        principal: Principal,
        tool: str,
        arguments: Mapping[str, Any] | str | bytes,
        *,
        rationale: str | None = None,
        supersedes: str | None = None,
        mandate_id: str | None = None,
    ) -> Proposal:
        return await self.run_sync(
            self.gate.propose,
            principal,
            tool,
            arguments,
            rationale=rationale,
            supersedes=supersedes,
            mandate_id=mandate_id,
        )

    async def propose_mandate(
        self,
        principal: Principal,
        tool: str,
        constraints: Mapping[str, Any],
        *,
        expires_in_seconds: int,
    ) -> MandateState:
        return await self.run_sync(
            self.gate.propose_mandate,
            principal,
            tool,
            constraints,
            expires_in_seconds=expires_in_seconds,
        )

    async def decide_mandate(
        self, principal: Principal, mandate_id: str, decision: Decision, *, idempotency_key: str
    ) -> MandateState:
        return await self.run_sync(
            self.gate.decide_mandate,
            principal,
            mandate_id,
            decision,
            idempotency_key=idempotency_key,
        )

    async def mandate(self, principal: Principal, mandate_id: str) -> MandateState:
        return await self.run_sync(self.gate.mandate, principal, mandate_id)

    async def revoke_mandate(
        self, principal: Principal, mandate_id: str, *, reason: str
    ) -> MandateState:
        return await self.run_sync(self.gate.revoke_mandate, principal, mandate_id, reason=reason)

    async def decide(
        self, principal: Principal, proposal_id: str, decision: Decision, *, idempotency_key: str
    ) -> DecisionResult:
        return await self.run_sync(
            self.gate.decide, principal, proposal_id, decision, idempotency_key=idempotency_key
        )

    async def decide_batch(
        self, principal: Principal, items: Sequence[BatchItem], *, idempotency_key: str
    ) -> list[BatchOutcome]:
        return await self.run_sync(
            self.gate.decide_batch, principal, items, idempotency_key=idempotency_key
        )

    async def repeated_decision(
        self, principal: Principal, proposal_id: str, decision: Decision, *, idempotency_key: str
    ) -> DecisionResult | None:
        return await self.run_sync(
            self.gate.repeated_decision,
            principal,
            proposal_id,
            decision,
            idempotency_key=idempotency_key,
        )

    async def execute(
        self,
        principal: Principal,
        proposal_id: str,
        confirmation_token: str,
        *,
        idempotency_key: str | None = None,
    ) -> ExecutionResult:
        return await self.run_sync(
            self.gate.execute,
            principal,
            proposal_id,
            confirmation_token,
            idempotency_key=idempotency_key,
        )

    async def retry(self, principal: Principal, execution_id: str) -> ExecutionResult:
        return await self.run_sync(self.gate.retry, principal, execution_id)

    async def reconcile(
        self, *, older_than: timedelta = timedelta(0), limit: int = 100
    ) -> list[Reconciled]:
        return await self.run_sync(self.gate.reconcile, older_than=older_than, limit=limit)

    async def resolve(
        self,
        principal: Principal,
        execution_id: str,
        *,
        outcome: Literal["succeeded", "failed_terminal"],
        provider_reference: str | None = None,
        reason: str,
    ) -> ExecutionResult:
        return await self.run_sync(
            self.gate.resolve,
            principal,
            execution_id,
            outcome=outcome,
            provider_reference=provider_reference,
            reason=reason,
        )

    async def stop(
        self, principal: Principal, execution_id: str, *, reason: str
    ) -> ExecutionResult:
        return await self.run_sync(self.gate.stop, principal, execution_id, reason=reason)

    async def revoke(self, principal: Principal, proposal_id: str, *, reason: str) -> Proposal:
        return await self.run_sync(self.gate.revoke, principal, proposal_id, reason=reason)

    async def cancel(self, principal: Principal, proposal_id: str) -> Proposal:
        return await self.run_sync(self.gate.cancel, principal, proposal_id)

    async def expire_due(self) -> int:
        return await self.run_sync(self.gate.expire_due)

    async def follow_up(self, *, limit: int = 100) -> FollowupPass:
        return await self.run_sync(self.gate.follow_up, limit=limit)

    async def assignment(self, proposal: Proposal) -> Assignment:
        return await self.run_sync(self.gate.assignment, proposal)

    async def start_idp_approval(
        self, principal: Principal, proposal_id: str, *, expected_version: int
    ) -> CibaPending:
        return await self.run_sync(
            self.gate.start_idp_approval, principal, proposal_id, expected_version=expected_version
        )

    async def approve_through_idp(
        self,
        principal: Principal,
        proposal_id: str,
        auth_req_id: str,
        *,
        expected_version: int,
        idempotency_key: str,
    ) -> DecisionResult | None:
        return await self.run_sync(
            self.gate.approve_through_idp,
            principal,
            proposal_id,
            auth_req_id,
            expected_version=expected_version,
            idempotency_key=idempotency_key,
        )

    async def receipt_file(self, principal: Principal, execution_id: str) -> dict[str, Any]:
        return await self.run_sync(self.gate.receipt_file, principal, execution_id)

    async def signed_receipt_for(
        self, tenant: str, proposal_id: str, execution_id: str
    ) -> str | None:
        return await self.run_sync(self.gate.signed_receipt_for, tenant, proposal_id, execution_id)

    async def reassign(
        self, principal: Principal, proposal_id: str, *, to: Sequence[str], reason: str
    ) -> Proposal:
        return await self.run_sync(self.gate.reassign, principal, proposal_id, to=to, reason=reason)

    async def proposal(self, principal: Principal, proposal_id: str) -> Proposal:
        return await self.run_sync(self.gate.proposal, principal, proposal_id)

    async def proposals(
        self, principal: Principal, *, statuses: Sequence[ProposalStatus] = (), limit: int = 100
    ) -> list[Proposal]:
        return await self.run_sync(self.gate.proposals, principal, statuses=statuses, limit=limit)

    async def inbox(
        self,
        principal: Principal,
        *,
        after: tuple[datetime, str] | None = None,
        limit: int = 50,
    ) -> list[Proposal]:
        return await self.run_sync(self.gate.inbox, principal, after=after, limit=limit)

    async def execution(self, principal: Principal, execution_id: str) -> Execution:
        return await self.run_sync(self.gate.execution, principal, execution_id)

    async def execution_for(self, principal: Principal, proposal_id: str) -> Execution | None:
        return await self.run_sync(self.gate.execution_for, principal, proposal_id)

    async def receipt(self, principal: Principal, execution_id: str) -> Receipt:
        return await self.run_sync(self.gate.receipt, principal, execution_id)

    async def export_bundle(
        self, tenant: str, *, since: int = 0, problems: list[str] | None = None
    ) -> dict[str, Any]:
        return await self.run_sync(self.gate.export_bundle, tenant, since=since, problems=problems)

    async def checkpoint_due(self) -> list[CheckpointRecord]:
        return await self.run_sync(self.gate.checkpoint_due)

    async def checkpoint_now(
        self, *, on_refusal: Callable[[str, SignerRefused], None] | None = None
    ) -> list[CheckpointRecord]:
        return await self.run_sync(self.gate.checkpoint_now, on_refusal=on_refusal)

    async def init_signer(
        self, tenant: str, *, adopt_head: bool = False
    ) -> CheckpointRecord | None:
        return await self.run_sync(self.gate.init_signer, tenant, adopt_head=adopt_head)

    async def register_passkey(
        self,
        principal: Principal,
        *,
        credential_id: str,
        public_key: str,
        public_jwk: dict[str, Any],
        sign_count: int,
        evidence: dict[str, Any] | None = None,
        attestation: dict[str, Any] | None = None,
    ) -> PasskeyRecord:
        return await self.run_sync(
            self.gate.register_passkey,
            principal,
            evidence=evidence,
            attestation=attestation,
            credential_id=credential_id,
            public_key=public_key,
            public_jwk=public_jwk,
            sign_count=sign_count,
        )

    async def passkeys(self, principal: Principal) -> list[PasskeyRecord]:
        return await self.run_sync(self.gate.passkeys, principal)

    async def signed_receipt(self, principal: Principal, execution_id: str) -> str | None:
        return await self.run_sync(self.gate.signed_receipt, principal, execution_id)

    async def confirmation_token(self, principal: Principal, proposal_id: str) -> str:
        return await self.run_sync(self.gate.confirmation_token, principal, proposal_id)

    async def audit_events(
        self,
        principal: Principal,
        *,
        proposal_id: str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[AuditEvent]:
        return await self.run_sync(
            self.gate.audit_events, principal, proposal_id=proposal_id, after=after, limit=limit
        )

    async def verify_audit(self) -> ChainReport:
        return await self.run_sync(self.gate.verify_audit)
