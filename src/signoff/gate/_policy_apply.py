"""Putting a policy file on record: ``signoff policy apply``, and ``serve`` on (re)load.

A new version is recorded once (``policy_versions``) and announced in every
tenant's audit chain (``policy.applied``: its digest, the one it replaces,
who applied it and the settings that changed), so each tenant's auditors see
that the rules changed and when. Proposals already made keep the policy they
were proposed under (their snapshot; the token binds its version); decided
ones are never touched.
"""

from __future__ import annotations

from pathlib import Path

from signoff.policy import PolicyFile, document_changes
from signoff.store._base import Store
from signoff.store._sql import PolicyVersionRecord

MAX_CHANGES_AUDITED = 50


def current_policy_version(store: Store) -> PolicyVersionRecord | None:
    with store.read() as tx:
        found = tx.policy_versions(limit=1)
    return found[0] if found else None


def apply_policy(
    store: Store, policy: PolicyFile, *, applied_by: str, now: int
) -> PolicyVersionRecord | None:
    """Record ``policy`` as the version in force; None when it already is."""
    with store.transaction() as tx:
        previous = tx.policy_versions(limit=1)
        before = previous[0] if previous else None
        if before is not None and before.digest == policy.digest:
            return None
        record = PolicyVersionRecord(
            digest=policy.digest,
            applied_at=now,
            applied_by=applied_by,
            source=Path(policy.source).name,
            document=dict(policy.document),
        )
        tx.record_policy_version(record)
        changes = document_changes(before.document if before else {}, dict(policy.document))
        tenants = sorted(set(tx.audit_heads()) | set(policy.tenant_defaults))
        for tenant in tenants:
            tx.append_audit(
                tenant=tenant,
                at=now,
                kind="policy.applied",
                actor=applied_by,
                data={
                    "digest": policy.digest,
                    "previous": None if before is None else before.digest,
                    "source": record.source,
                    "changes": changes[:MAX_CHANGES_AUDITED],
                    "more_changes": max(0, len(changes) - MAX_CHANGES_AUDITED),
                },
            )
        return record
