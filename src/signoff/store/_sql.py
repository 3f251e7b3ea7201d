"""The protocol's reads and single-winner writes, in SQL both backends run.

Every state change is a conditional ``UPDATE … WHERE status = …`` whose row
count says whether this caller won; nothing relies on isolation levels above
Read Committed. Statements are written with ``?`` placeholders; a backend's
:class:`Dialect` rewrites them once.
"""

from __future__ import annotations

from signoff.store._q_audit import AuditEntry, AuditQueries, audit_entry
from signoff.store._q_channels import ChannelLink, ChannelMessage, ChannelQueries, LinkCode
from signoff.store._q_checkpoints import CheckpointQueries, CheckpointRecord
from signoff.store._q_delegations import Delegation, DelegationQueries
from signoff.store._q_deliveries import DeliveryQueries, DeliveryRecord
from signoff.store._q_executions import ExecutionQueries
from signoff.store._q_followups import Assignment, FollowupQueries
from signoff.store._q_idempotency import IdempotencyQueries, IdempotencyRecord
from signoff.store._q_mandates import (
    MandateQueries,
    MandateRecord,
    MandateWrite,
    MandateWriteRecord,
    PolicyVersionRecord,
)
from signoff.store._q_passkeys import PasskeyQueries, PasskeyRecord
from signoff.store._q_proposals import Circle, ProposalQueries
from signoff.store._q_push import PushQueries, PushSubscription
from signoff.store._q_reads import StepReads
from signoff.store._q_refusals import RefusalQueries
from signoff.store._q_roles import RoleGrant, RoleQueries
from signoff.store._q_sessions import SessionQueries
from signoff.store._q_steps import (
    ConsumeWrite,
    DecisionWrite,
    IssuedToken,
    OutcomeWrite,
    StepQueries,
)
from signoff.store._q_tokens import TokenQueries, TokenRecord
from signoff.store._sqlbase import Connection, Cursor, Dialect, PremiseFailed


class SqlTransaction(
    StepQueries,
    StepReads,
    MandateQueries,
    ProposalQueries,
    TokenQueries,
    ExecutionQueries,
    IdempotencyQueries,
    AuditQueries,
    DeliveryQueries,
    CheckpointQueries,
    RoleQueries,
    RefusalQueries,
    PasskeyQueries,
    ChannelQueries,
    PushQueries,
    DelegationQueries,
    FollowupQueries,
    SessionQueries,
):
    """One open transaction; every method runs inside it (one mixin per table family)."""


__all__ = [
    "Assignment",
    "AuditEntry",
    "ChannelLink",
    "ChannelMessage",
    "CheckpointRecord",
    "Circle",
    "Connection",
    "ConsumeWrite",
    "Cursor",
    "DecisionWrite",
    "Delegation",
    "DeliveryRecord",
    "Dialect",
    "IdempotencyRecord",
    "IssuedToken",
    "LinkCode",
    "MandateRecord",
    "MandateWrite",
    "MandateWriteRecord",
    "OutcomeWrite",
    "PasskeyRecord",
    "PolicyVersionRecord",
    "PremiseFailed",
    "PushSubscription",
    "RoleGrant",
    "SqlTransaction",
    "TokenRecord",
    "audit_entry",
]
