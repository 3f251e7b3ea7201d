"""The Gate: the one object an edge talks to."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal

from signoff._clock import Clock, RandomSource, SystemClock, SystemRandom
from signoff._directory import RoleDirectory, TransactionalDirectory
from signoff._model import (
    Decision,
    DecisionKind,
    DecisionResult,
    ExecutionResult,
    Principal,
    Proposal,
)
from signoff._telemetry import span
from signoff._tokens import TokenMinter
from signoff.audit._chain import ChainReport, verify_chain
from signoff.catalog._catalog import Catalog
from signoff.exceptions import EvidenceInvalid, Refusal, SignerRefused, VersionConflict
from signoff.gate import (
    _batch,
    _checkpoints,
    _decide,
    _device,
    _execute,
    _export,
    _followups,
    _lifecycle,
    _mandate,
    _propose,
    _reconcile,
    _resolve,
    _signer_init,
)
from signoff.gate._context import GateContext, check_text
from signoff.gate._followups import FollowupPass
from signoff.gate._hooks import ExecutionHooks, no_hooks
from signoff.gate._idp_evidence import Backchannel, start_idp_approval
from signoff.gate._mandate import MandateState
from signoff.gate._reads import GateReads
from signoff.gate._reconcile import Reconciled
from signoff.gate._refusals import audited, presented_hash
from signoff.gate._signed_receipt import with_signed_receipt
from signoff.policy import PolicyFile, PolicySource
from signoff.store._base import Store
from signoff.store._sql import Assignment, CheckpointRecord, PasskeyRecord

if TYPE_CHECKING:
    from signoff.gate._proof import GateProof
    from signoff.identity._ciba import CibaPending

MAX_PAGE = 500


class Gate(GateReads):
    """Propose, decide, execute: PROTOCOL.md as method calls.

    ``token_key`` (≥ 32 bytes) derives confirmation tokens; keep it secret and
    stable across restarts, or tokens issued before a restart cannot be
    handed out again (they still verify: only their hash is compared).
    ``directory`` is where roles are checked *now* (PROTOCOL rule 11); without
    one, the roles in the caller's identity token are trusted until it expires.
    ``surfaces`` lists where decisions may come from (rule 14); empty allows any.
    ``policy`` is the deployment's policy file (docs/POLICIES.md), parsed or as a
    :class:`~signoff.policy.PolicySource` that ``serve`` reloads; without one each tool's
    Python policy applies.
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
        policy: PolicySource | PolicyFile | None = None,
        backchannel: Backchannel | None = None,
    ) -> None:
        self.catalog = catalog
        self.store = store
        if not isinstance(policy, PolicySource):
            policy = PolicySource.of(catalog, policy)
        self.policies = policy
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
            after_write=None if proof is None else _checkpoints.after_write,
            policies=policy,
            backchannel=backchannel,
        )
        if proof is not None:
            from signoff.gate._proof import seal_with

            # Every event this process appends is authenticated with the key file's MAC key:
            # the signer covers nothing else (PROTOCOL rule 16).
            store.event_seal = seal_with(proof)

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

    @property
    def surfaces(self) -> tuple[str, ...]:
        """The deployment's approval surfaces (rule 14); empty allows any."""
        return self._ctx.surfaces

    def propose(
        self,
        principal: Principal,
        tool: str,
        arguments: Mapping[str, Any] | str | bytes,
        *,
        rationale: str | None = None,
        mandate_id: str | None = None,
        supersedes: str | None = None,
    ) -> Proposal:
        """Freeze a write request into a proposal awaiting confirmation.

        With ``mandate_id``, a write the mandate covers is confirmed at once (its budget
        and count debited atomically); one it does not cover is refused with the
        constraint named, or, where the policy says so, waits for a person.
        ``supersedes`` names a proposal a reviewer returned (``changes_requested``) that this
        one answers; it is frozen with the new proposal and never edits the old one.
        """
        with span("signoff.propose", tool=tool) as step:
            check_text(tool=tool, arguments=_text_of(arguments), rationale=rationale)
            proposal = _propose.propose(
                self._ctx,
                principal,
                tool,
                arguments,
                rationale=rationale,
                mandate_id=mandate_id,
                supersedes=supersedes,
            )
            step.set(proposal_id=proposal.proposal_id, outcome=proposal.status.value)
            return proposal

    def propose_mandate(
        self,
        principal: Principal,
        tool: str,
        constraints: Mapping[str, Any],
        *,
        expires_in_seconds: int,
    ) -> MandateState:
        """Ask for a standing approval over ``tool`` within ``constraints`` (POLICIES.md)."""
        return _mandate.propose_mandate(
            self._ctx, principal, tool, constraints, expires_in_seconds=expires_in_seconds
        )

    def start_idp_approval(
        self, principal: Principal, proposal_id: str, *, expected_version: int
    ) -> CibaPending:
        """Ask ``principal``'s identity provider to have them approve this proposal on their own
        device (CIBA); then :meth:`approve_through_idp` with the ``auth_req_id``."""
        proposal = self.proposal(principal, proposal_id)
        if proposal.version != expected_version:
            raise VersionConflict(
                "the proposal changed since you saw it",
                proposal_id=proposal_id,
                current_version=proposal.version,
            )
        return start_idp_approval(self._ctx, principal, proposal, expected_version)

    def approve_through_idp(
        self,
        principal: Principal,
        proposal_id: str,
        auth_req_id: str,
        *,
        expected_version: int,
        idempotency_key: str,
    ) -> DecisionResult | None:
        """Poll the provider once: None while the person has not answered; once they approved,
        the approval decided with the provider's token as its evidence."""
        if self._ctx.backchannel is None:
            raise EvidenceInvalid("no identity provider is configured to vouch for approvals")
        plain = Decision(DecisionKind.APPROVE, expected_version)
        # A retry after the answer was lost: the provider's request is spent, the first stands.
        first = _decide.repeated(
            self._ctx, principal, proposal_id, plain, idempotency_key=idempotency_key
        )
        if first is not None:
            return first
        token = self._ctx.backchannel.poll(auth_req_id)
        if token is None:
            return None
        decision = dataclasses.replace(plain, idp={"token": token})
        return self.decide(principal, proposal_id, decision, idempotency_key=idempotency_key)

    def decide_mandate(
        self,
        principal: Principal,
        mandate_id: str,
        decision: Decision,
        *,
        idempotency_key: str,
    ) -> MandateState:
        """Approve or reject a mandate, exactly as a proposal's decision."""
        return _mandate.decide_mandate(
            self._ctx, principal, mandate_id, decision, idempotency_key=idempotency_key
        )

    def mandate(self, principal: Principal, mandate_id: str) -> MandateState:
        """A mandate its circle may see: remaining budget and count, and its writes."""
        return _mandate.read_mandate(self._ctx, principal, mandate_id)

    def revoke_mandate(self, principal: Principal, mandate_id: str, *, reason: str) -> MandateState:
        """End a mandate at once; its confirmed writes not yet started are revoked too."""
        return _mandate.revoke_mandate(self._ctx, principal, mandate_id, reason=reason)

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
        with span("signoff.decide", proposal_id=proposal_id, decision=decision.kind.value) as step:
            check_text(
                reason=decision.reason,
                reason_code=decision.reason_code,
                retyped=decision.retyped,
                idempotency_key=idempotency_key,
            )
            result = audited(
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
            step.set(tool=result.proposal.tool, outcome=result.status.value)
            return result

    def decide_batch(
        self,
        principal: Principal,
        items: Sequence[_batch.BatchItem],
        *,
        idempotency_key: str,
    ) -> list[_batch.BatchOutcome]:
        """Several decisions, each its own ``decide`` (version, digest, audit), answered per
        item; approvals that need re-typing, a device or the IdP are ``not_batchable``."""

        def refuse(proposal_id: str, refusal: Refusal) -> None:
            def raise_it() -> None:
                raise refusal

            with contextlib.suppress(Refusal):
                audited(self._ctx, "decide", principal, raise_it, proposal_id=proposal_id)

        return _batch.decide_batch(
            items,
            idempotency_key,
            # Read as decide would: a proposal outside the caller's circle is 404, audited.
            read=lambda proposal_id: audited(
                self._ctx,
                "decide",
                principal,
                lambda: self.proposal(principal, proposal_id),
                proposal_id=proposal_id,
            ),
            decide=lambda proposal_id, decision, key: self.decide(
                principal, proposal_id, decision, idempotency_key=key
            ),
            refuse=refuse,
        )

    def repeated_decision(
        self,
        principal: Principal,
        proposal_id: str,
        decision: Decision,
        *,
        idempotency_key: str,
    ) -> DecisionResult | None:
        """The first answer if ``idempotency_key`` already decided this, else None."""
        check_text(reason=decision.reason, idempotency_key=idempotency_key)
        return audited(
            self._ctx,
            "decide",
            principal,
            lambda: _decide.repeated(
                self._ctx, principal, proposal_id, decision, idempotency_key=idempotency_key
            ),
            proposal_id=proposal_id,
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
        with span("signoff.execute", proposal_id=proposal_id) as step:
            check_text(confirmation_token=confirmation_token, idempotency_key=idempotency_key)
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
            step.set(
                tool=None if result.receipt is None else result.receipt.operation,
                execution_id=result.execution.execution_id,
                outcome=result.execution.status.value,
                duplicate=result.duplicate,
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
        check_text(provider_reference=provider_reference, reason=reason)
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
        check_text(reason=reason)
        result = audited(
            self._ctx,
            "stop",
            principal,
            lambda: _resolve.stop(self._ctx, principal, execution_id, reason=reason),
            execution_id=execution_id,
        )
        return with_signed_receipt(self._ctx, result)

    def revoke(self, principal: Principal, proposal_id: str, *, reason: str) -> Proposal:
        check_text(reason=reason)
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

    def follow_up(self, *, limit: int = 100) -> FollowupPass:
        """Expire what is past its deadline; send due reminders and escalations, each once."""
        return _followups.run_followups(self._ctx, limit=limit)

    def reassign(
        self, principal: Principal, proposal_id: str, *, to: Sequence[str], reason: str
    ) -> Proposal:
        """An admin hands a pending proposal to ``to`` (``role:NAME`` / ``person:SUBJECT``)."""
        check_text(reason=reason)
        return audited(
            self._ctx,
            "reassign",
            principal,
            lambda: _followups.reassign(self._ctx, principal, proposal_id, to=to, reason=reason),
            proposal_id=proposal_id,
        )

    def assignment(self, proposal: Proposal) -> Assignment:
        """Who an escalation or a reassignment added to those who may decide ``proposal``."""
        with self.store.read() as tx:
            return tx.assignment(proposal.tenant, proposal.proposal_id)

    def register_passkey(
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
        """Keep a passkey the page verified (py_webauthn); recorded in the audit chain with
        what vouches for it (``evidence``: the identity provider's ID token) and the
        authenticator's ``attestation`` when it gave one."""
        return _device.register_passkey(
            self._ctx,
            principal,
            credential_id=credential_id,
            public_key=public_key,
            public_jwk=public_jwk,
            sign_count=sign_count,
            evidence=evidence,
            attestation=attestation,
        )

    def passkeys(self, principal: Principal) -> list[PasskeyRecord]:
        """The passkeys this person enrolled in their tenant."""
        with self.store.read() as tx:
            return tx.passkeys_of(principal.tenant, principal.subject)

    def verify_audit(self) -> ChainReport:
        return verify_audit(self.store)

    def export_bundle(
        self, tenant: str, *, since: int = 0, problems: list[str] | None = None
    ) -> dict[str, Any]:
        """One tenant's log as an offline-verifiable bundle (docs/PROOF.md); needs ``proof``.

        What the exporter found wrong (the signer refused, the log was truncated) is
        appended to ``problems``; the bundle still carries every signed checkpoint.
        """
        return _export.export_bundle(self._ctx, tenant, since=since, problems=problems)

    def checkpoint_due(self) -> list[CheckpointRecord]:
        """Sign a checkpoint for each tenant with events past the count or age limit."""
        return _checkpoints.checkpoint_due(self._ctx)

    def checkpoint_now(
        self, *, on_refusal: Callable[[str, SignerRefused], None] | None = None
    ) -> list[CheckpointRecord]:
        """Each tenant's checkpoint at its log's head, signing one where events are uncovered.

        A tenant the signer refuses is reported (logged, counted, audited) and handed to
        ``on_refusal``; the others are still checkpointed.
        """
        if self._ctx.proof is None:
            return []
        with self.store.read() as tx:
            tenants = sorted(tx.audit_heads())
        made: list[CheckpointRecord] = []
        for tenant in tenants:
            try:
                record = _checkpoints.checkpoint(self._ctx, tenant)
            except SignerRefused as refusal:
                _checkpoints.report_refusal(self._ctx, tenant, refusal)
                if on_refusal is not None:
                    on_refusal(tenant, refusal)
                continue
            if record is not None:
                made.append(record)
        return made

    def init_signer(self, tenant: str, *, adopt_head: bool = False) -> CheckpointRecord | None:
        """Re-initialise the signer's view of one log (``signoff audit init-signer``)."""
        return _signer_init.init_signer(self._ctx, tenant, adopt_head=adopt_head)


def verify_audit(store: Store) -> ChainReport:
    """Walk every tenant's audit chain from genesis to its head."""
    with store.read() as tx:
        return verify_chain(tx.audit_events(), tx.audit_heads())


def _text_of(arguments: Mapping[str, Any] | str | bytes) -> object:
    """The arguments' strings as the store would keep them (a JSON text is parsed first)."""
    if isinstance(arguments, Mapping):
        return dict(arguments)
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments if isinstance(arguments, str) else None
