"""The role directory ``signoff serve`` consults: entries kept in signoff's own store.

Managed with ``signoff roles grant|revoke|list`` and ``/v1/roles``; every
change is an audit event in the tenant's chain (who granted or revoked what,
when). The gate asks it inside the transaction of the step it guards.

Two modes (the ``role_directory`` setting):

- ``grants``: a role holds only while the directory grants it (and the identity
  token still claims it). Every approver is granted with ``signoff roles grant``.
- ``revocations``: a role the identity token claims holds unless the directory
  revoked it. For teams whose identity provider is the source of roles; the
  directory is how a removal takes effect before the token expires.

(``off`` — no directory at all: token roles hold until the token expires.)
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from signoff._clock import Clock, SystemClock, to_micros
from signoff._directory import RoleDirectory
from signoff.exceptions import InvalidRequest, NotEntitled, NotFound
from signoff.store._base import Store
from signoff.store._sql import Delegation, RoleGrant, SqlTransaction

MAX_NAME = 255
MAX_DELEGATION = 90 * 24 * 3600 * 1_000_000
"""The longest delegation window, in microseconds (90 days)."""
DirectoryMode = Literal["grants", "revocations"]
DIRECTORY_MODES: tuple[DirectoryMode, ...] = ("grants", "revocations")


@dataclass(frozen=True, slots=True)
class _InTransaction:
    tx: SqlTransaction
    trust_tokens: bool
    now: int

    def holds_role(self, tenant: str, subject: str, role: str) -> bool:
        """Held directly, or through a delegation from someone who holds it directly now."""
        return self._holds_directly(tenant, subject, role) or (
            self.delegator_of(tenant, subject, role) is not None
        )

    def _holds_directly(self, tenant: str, subject: str, role: str) -> bool:
        entry = self.tx.role_entry(tenant, subject, role)
        return self.trust_tokens if entry is None else entry

    def was_revoked(self, tenant: str, subject: str, role: str) -> bool:
        return self.tx.role_entry(tenant, subject, role) is False

    def delegated_roles(self, tenant: str, subject: str) -> frozenset[str]:
        return frozenset(
            d.role
            for d in self.tx.delegations_to(tenant, subject, self.now)
            if self._delegator_holds(d)
        )

    def delegator_of(self, tenant: str, subject: str, role: str) -> str | None:
        if self.tx.role_entry(tenant, subject, role) is True:
            return None  # granted to them: they act as themselves
        for d in self.tx.delegations_to(tenant, subject, self.now):
            if d.role == role and self._delegator_holds(d):
                return d.delegator
        return None

    def _delegator_holds(self, d: Delegation) -> bool:
        # A delegate stands in for someone who holds the role themselves (no chains): the
        # delegator's entry, read here, is one of the step's premises like any role entry.
        entry = self.tx.role_entry(d.tenant, d.delegator, d.role)
        return self.trust_tokens if entry is None else entry


class StoreRoleDirectory:
    """Role entries per (tenant, subject, role), with who changed them and when."""

    def __init__(
        self, store: Store, *, mode: DirectoryMode = "grants", clock: Clock | None = None
    ) -> None:
        if mode not in DIRECTORY_MODES:
            raise ValueError(f"mode must be one of {', '.join(DIRECTORY_MODES)}")
        self.store = store
        self.mode = mode
        self._clock = clock or SystemClock()

    def holds_role(self, tenant: str, subject: str, role: str) -> bool:
        with self.store.read() as tx:
            return self.in_transaction(tx).holds_role(tenant, subject, role)

    def delegated_roles(self, tenant: str, subject: str) -> frozenset[str]:
        with self.store.read() as tx:
            return self._at(tx).delegated_roles(tenant, subject)

    def delegator_of(self, tenant: str, subject: str, role: str) -> str | None:
        with self.store.read() as tx:
            return self._at(tx).delegator_of(tenant, subject, role)

    def was_revoked(self, tenant: str, subject: str, role: str) -> bool:
        """True when the role was granted once and then withdrawn (not merely never granted)."""
        with self.store.read() as tx:
            return tx.role_entry(tenant, subject, role) is False

    def in_transaction(self, tx: Any) -> RoleDirectory:
        assert isinstance(tx, SqlTransaction)
        return self._at(tx)

    def _at(self, tx: SqlTransaction) -> _InTransaction:
        now = to_micros(self._clock.now())
        return _InTransaction(tx, trust_tokens=self.mode == "revocations", now=now)

    def delegate(
        self,
        tenant: str,
        delegator: str,
        delegate: str,
        role: str,
        *,
        starts_at: datetime,
        ends_at: datetime,
        by: str,
    ) -> Delegation:
        """``delegator`` lends ``role`` to ``delegate`` for [starts_at, ends_at) (audited).

        The delegator must hold the role themselves now; a delegate never lends it on.
        """
        _check_names(tenant, delegator, delegate, role, by)
        now = to_micros(self._clock.now())
        start, end = to_micros(starts_at), to_micros(ends_at)
        if delegate == delegator:
            raise InvalidRequest("a delegation is to someone else")
        if not (start < end and end > now and end - start <= MAX_DELEGATION):
            raise InvalidRequest(
                "a delegation window ends after it starts, in the future, and lasts at most 90 days"
            )
        with self.store.transaction() as tx:
            if not self._at(tx)._holds_directly(tenant, delegator, role):
                raise NotEntitled(
                    f"{delegator} does not hold {role!r} themselves, so cannot delegate it",
                    required_role=role,
                )
            record = Delegation(
                "dlg_" + secrets.token_hex(12), tenant, delegator, delegate, role,
                start, end, by, now,
            )  # fmt: skip
            tx.insert_delegation(record)
            tx.append_audit(
                tenant=tenant,
                at=now,
                kind="role.delegated",
                actor=by,
                data={
                    "delegation_id": record.delegation_id,
                    "delegator": delegator,
                    "delegate": delegate,
                    "role": role,
                    "starts_at": start,
                    "ends_at": end,
                },
            )
        return record

    def end_delegation(self, tenant: str, delegation_id: str, *, by: str) -> bool:
        """End a delegation now (audited); False when it had already ended."""
        now = to_micros(self._clock.now())
        with self.store.transaction() as tx:
            found = tx.delegation(tenant, delegation_id)
            if found is None:
                raise NotFound("no such delegation", delegation_id=delegation_id)
            if not tx.end_delegation(tenant, delegation_id, now):
                return False
            tx.append_audit(
                tenant=tenant,
                at=now,
                kind="role.delegation_ended",
                actor=by,
                data={"delegation_id": delegation_id, "delegate": found.delegate},
            )
        return True

    def delegations(self, tenant: str, *, subject: str | None = None) -> list[Delegation]:
        with self.store.read() as tx:
            return tx.delegations_of(tenant, subject)

    def grant(self, tenant: str, subject: str, role: str, *, by: str) -> bool:
        """Grant the role (audited); False when it was already granted."""
        return self._set(tenant, subject, role, by=by, revoked=False)

    def revoke(self, tenant: str, subject: str, role: str, *, by: str) -> bool:
        """Withdraw the role (audited); False when it was already revoked."""
        return self._set(tenant, subject, role, by=by, revoked=True)

    def grants(self, tenant: str, *, subject: str | None = None) -> list[RoleGrant]:
        """Every entry of the tenant (granted and revoked), by subject and role."""
        with self.store.read() as tx:
            return tx.role_grants(tenant, subject=subject)

    def _set(self, tenant: str, subject: str, role: str, *, by: str, revoked: bool) -> bool:
        _check_names(tenant, subject, role, by)
        now = to_micros(self._clock.now())
        with self.store.transaction() as tx:
            changed = tx.set_role(RoleGrant(tenant, subject, role, by, now, revoked))
            if changed:
                tx.append_audit(
                    tenant=tenant,
                    at=now,
                    kind="role.revoked" if revoked else "role.granted",
                    actor=by,
                    data={"subject": subject, "role": role},
                )
        return changed


def _check_names(*names: str) -> None:
    for name in names:
        if not isinstance(name, str) or not name.isprintable() or not 0 < len(name) <= MAX_NAME:
            raise InvalidRequest(
                f"tenant, subject, role and actor are 1 to {MAX_NAME} printable characters"
            )
