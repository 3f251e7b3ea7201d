"""What every gate step shares: catalog, store, clock, token minter, directory."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from signoff._canonical import args_digest, canonical_json
from signoff._clock import Clock, to_micros
from signoff._directory import RoleDirectory
from signoff._model import DecisionKind, Principal, Proposal
from signoff._telemetry import span
from signoff._text import unstorable
from signoff._tokens import TokenMinter
from signoff.catalog._catalog import Catalog
from signoff.exceptions import ArgsMismatch, InvalidRequest
from signoff.gate._hooks import ExecutionHooks
from signoff.store._base import Store
from signoff.store._sql import SqlTransaction

if TYPE_CHECKING:
    from signoff.gate._idp_evidence import Backchannel
    from signoff.gate._proof import GateProof
    from signoff.policy import PolicyFile, PolicySource

log = logging.getLogger("signoff")

T = TypeVar("T")
WRITE_ATTEMPTS = 3
READ_ATTEMPTS = 3
"""How often a step reads again after its write found a premise changed (then: a conflict)."""


@dataclass(frozen=True, slots=True)
class GateContext:
    catalog: Catalog
    store: Store
    clock: Clock
    minter: TokenMinter
    directory: RoleDirectory | None
    audience: str
    lease: timedelta
    hooks: ExecutionHooks
    proof: GateProof | None = None
    surfaces: tuple[str, ...] = ()
    """The deployment's approval surfaces (PROTOCOL rule 14); empty allows any."""
    directory_in_store: bool = False
    """The directory's entries are rows of this store: asked inside its transactions, and
    a write step's premises (a runtime Protocol check, made once, not per request)."""
    after_write: Callable[[GateContext, Mapping[str, int]], None] | None = None
    """Told, after each committed write, which tenants' logs it appended to and their new
    heads (the gate wires the signer here, so this ground floor knows nothing above it)."""

    policies: PolicySource | None = None
    """The policy file in force (docs/POLICIES.md); None: the tools' Python policies."""
    backchannel: Backchannel | None = None
    """signoff's CIBA client at the approvers' identity provider (``evidence: idp``)."""

    @property
    def policy_file(self) -> PolicyFile | None:
        return None if self.policies is None else self.policies.current

    def now_micros(self) -> int:
        return to_micros(self.clock.now())

    def directory_in(self, tx: SqlTransaction) -> RoleDirectory | None:
        """The role directory, asked inside ``tx`` when it lives in this store."""
        directory = self.directory
        if self.directory_in_store:
            return directory.in_transaction(tx)  # type: ignore[union-attr,no-any-return]
        return directory

    def write(self, step: Callable[[SqlTransaction], T], *, one_statement: bool = False) -> T:
        """Run ``step`` in a write transaction; run it again after a lost race.

        On PostgreSQL two racing inserts of one idempotency key block, then one
        fails; the retry sees the winner's row and answers as a duplicate. A
        deadlock or serialization failure rolled everything back, so it is
        retried too, a few times. ``one_statement``: the step's write is one
        statement (``Store.step``).
        """
        retryable = self.store.integrity_errors + self.store.transient_errors
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with (
                    span("signoff.store.write", attempt=attempt),
                    self.store.step() if one_statement else self.store.transaction() as tx,
                ):
                    result = step(tx)
            except retryable:
                if attempt == WRITE_ATTEMPTS:
                    raise
                continue
            if self.after_write is not None:
                self.after_write(self, tx.appended())  # checkpoints due by count or age
            return result
        raise AssertionError("unreachable")


def check_text(**fields: object) -> None:
    """Refuse text no store can keep (NUL, a lone surrogate) before anything is read.

    On every store alike: PostgreSQL cannot hold it, SQLite could, and the answer to the
    same input must not depend on the store (docs/PROTOCOL.md, rule 6).
    """
    for name, value in fields.items():
        why = unstorable(value)
        if why is not None:
            raise InvalidRequest(f"{name}: {why}", field=name)


def idempotency_scope(principal: Principal) -> str:
    """Idempotency keys belong to (tenant, person, agent-or-none): JCS, so nothing collides.

    The tenant is the table's own column; an agent acting for alice and alice
    herself never share a key, so neither can replay the other's answer.
    """
    return canonical_json([principal.subject, principal.actor]).decode()


def check_digest(proposal: Proposal, *, against: str | None = None) -> None:
    """requested = approved = executed digest, recomputed from the snapshot."""
    recomputed = args_digest(proposal.tool, proposal.tool_version, proposal.arguments)
    if recomputed != proposal.args_digest or (against is not None and against != recomputed):
        log.error("digest mismatch on proposal %s", proposal.proposal_id)
        raise ArgsMismatch(
            "the arguments no longer match the confirmed digest",
            proposal_id=proposal.proposal_id,
        )


def approvers(proposal: Proposal) -> tuple[str, ...]:
    return tuple(a.approver for a in proposal.approvals if a.kind is DecisionKind.APPROVE)
