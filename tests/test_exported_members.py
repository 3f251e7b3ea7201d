"""The public surface is deliberate: pinned here."""

from __future__ import annotations

import signoff
from signoff import exceptions

EXPECTED = {
    "Approval", "ApprovalPolicy", "AsyncGate", "AuditEvent", "Catalog", "ChainReport",
    "Clarification", "Clock", "Decision", "DecisionKind", "DecisionResult", "Execution",
    "ExecutionHooks",
    "ExecutionResult", "ExecutionStatus", "FollowupLoop", "FollowupPass", "Gate", "HookPoint",
    "ItemOutcome", "LookupOutcome",
    "ManualClock",
    "NotFoundAtProvider", "Pending", "Preview", "PreviewField", "Principal", "Proposal",
    "ProposalStatus", "ProviderOutcome", "ProviderTimeout", "RandomSource", "ReasonCode",
    "Receipt", "ReconcileAction", "ReconcileLoop", "Reconciled", "ResourceState",
    "RetryableFailure", "Risk", "RiskLevel",
    "RoleDirectory", "SQLiteStore", "SideEffect", "StaticRoleDirectory", "Store", "StrictArgs",
    "Succeeded", "SystemClock", "SystemRandom", "TerminalFailure", "WriteTool", "__version__",
    "args_digest", "canonical_json", "display_time", "normalize_time", "open_store",
    "resource_set_digest", "strict_json_schema", "verify_audit",
}  # fmt: skip


def test_all_is_pinned_and_sorted() -> None:
    """Adding or removing a public name is a conscious change."""
    assert set(signoff.__all__) == EXPECTED
    assert signoff.__all__ == sorted(signoff.__all__)
    for name in signoff.__all__:
        assert hasattr(signoff, name)


def test_refusal_codes_are_unique_and_rooted() -> None:
    """Every error class has its own stable code and descends from SignoffError."""
    classes = [
        obj
        for obj in vars(exceptions).values()
        if isinstance(obj, type) and issubclass(obj, exceptions.SignoffError)
    ]
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes))
    assert all(100 <= cls.status <= 599 for cls in classes)


def test_exception_tree_in_docstring_names_every_class() -> None:
    """The hierarchy drawn in exceptions.py's docstring is complete."""
    doc = exceptions.__doc__ or ""
    for obj in vars(exceptions).values():
        if isinstance(obj, type) and issubclass(obj, exceptions.SignoffError):
            assert obj.__name__ in doc, obj.__name__
