"""What every gate step shares: catalog, store, clock, token minter, directory."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from signoff._canonical import args_digest
from signoff._clock import Clock, to_micros
from signoff._directory import RoleDirectory
from signoff._model import DecisionKind, Principal, Proposal
from signoff._tokens import TokenMinter
from signoff.catalog._catalog import Catalog
from signoff.exceptions import ArgsMismatch, NotFound
from signoff.gate._hooks import ExecutionHooks
from signoff.store._base import Store
from signoff.store._sql import SqlTransaction

log = logging.getLogger("signoff")

T = TypeVar("T")


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

    def now_micros(self) -> int:
        return to_micros(self.clock.now())

    def write(self, step: Callable[[SqlTransaction], T]) -> T:
        """Run ``step`` in a write transaction, once more if a UNIQUE race was lost.

        On PostgreSQL two racing inserts of one idempotency key block, then one
        fails; the retry then sees the winner's row and answers as a duplicate.
        """
        for attempt in (1, 2):
            try:
                with self.store.transaction() as tx:
                    return step(tx)
            except self.store.integrity_errors:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def load_proposal(tx: SqlTransaction, principal: Principal, proposal_id: str) -> Proposal:
    """The proposal in the caller's tenant, or 404 without saying whether it exists elsewhere."""
    proposal = tx.proposal(principal.tenant, proposal_id)
    if proposal is None:
        raise NotFound("no such proposal", proposal_id=proposal_id)
    return proposal


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
