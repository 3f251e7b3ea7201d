"""signoff: AI agents propose writes; entitled people confirm exactly them; each runs once."""

# The names below are imported on first use (PEP 562), so `signoff --help` and the
# other CLI entry points start without importing pydantic, the gate or the stores.
# Add a public name as before: an import line in this block and its name in __all__.
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signoff._canonical import args_digest, canonical_json, resource_set_digest
    from signoff._clock import Clock, ManualClock, RandomSource, SystemClock, SystemRandom
    from signoff._directory import RoleDirectory, StaticRoleDirectory
    from signoff._model import (
        Approval,
        Decision,
        DecisionKind,
        DecisionResult,
        Execution,
        ExecutionResult,
        ExecutionStatus,
        Principal,
        Proposal,
        ProposalStatus,
        ReasonCode,
        Receipt,
    )
    from signoff.audit._chain import AuditEvent, ChainReport
    from signoff.catalog._catalog import Catalog
    from signoff.catalog._schema import strict_json_schema
    from signoff.catalog._times import display_time, normalize_time
    from signoff.catalog._tool import StrictArgs, WriteTool
    from signoff.catalog._types import (
        ApprovalPolicy,
        Clarification,
        ItemOutcome,
        LookupOutcome,
        NotFoundAtProvider,
        Pending,
        Preview,
        PreviewField,
        ProviderOutcome,
        ProviderTimeout,
        ResourceState,
        RetryableFailure,
        Risk,
        RiskLevel,
        SideEffect,
        Succeeded,
        TerminalFailure,
    )
    from signoff.gate._async import AsyncGate
    from signoff.gate._followup_loop import FollowupLoop
    from signoff.gate._followups import FollowupPass
    from signoff.gate._gate import Gate, verify_audit
    from signoff.gate._hooks import ExecutionHooks, HookPoint
    from signoff.gate._reconcile import ReconcileAction, Reconciled
    from signoff.gate._reconciler import ReconcileLoop
    from signoff.store import SQLiteStore, Store, open_store

__version__ = "0.1.0"

__all__ = [
    "Approval",
    "ApprovalPolicy",
    "AsyncGate",
    "AuditEvent",
    "Catalog",
    "ChainReport",
    "Clarification",
    "Clock",
    "Decision",
    "DecisionKind",
    "DecisionResult",
    "Execution",
    "ExecutionHooks",
    "ExecutionResult",
    "ExecutionStatus",
    "FollowupLoop",
    "FollowupPass",
    "Gate",
    "HookPoint",
    "ItemOutcome",
    "LookupOutcome",
    "ManualClock",
    "NotFoundAtProvider",
    "Pending",
    "Preview",
    "PreviewField",
    "Principal",
    "Proposal",
    "ProposalStatus",
    "ProviderOutcome",
    "ProviderTimeout",
    "RandomSource",
    "ReasonCode",
    "Receipt",
    "ReconcileAction",
    "ReconcileLoop",
    "Reconciled",
    "ResourceState",
    "RetryableFailure",
    "Risk",
    "RiskLevel",
    "RoleDirectory",
    "SQLiteStore",
    "SideEffect",
    "StaticRoleDirectory",
    "Store",
    "StrictArgs",
    "Succeeded",
    "SystemClock",
    "SystemRandom",
    "TerminalFailure",
    "WriteTool",
    "__version__",
    "args_digest",
    "canonical_json",
    "display_time",
    "normalize_time",
    "open_store",
    "resource_set_digest",
    "strict_json_schema",
    "verify_audit",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use, from the module its line above names."""
    from signoff._lazy import resolve

    return resolve(__name__, __file__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
