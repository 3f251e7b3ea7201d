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

from dataclasses import dataclass
from typing import Any, Literal

from signoff._clock import Clock, SystemClock, to_micros
from signoff._directory import RoleDirectory
from signoff.exceptions import InvalidRequest
from signoff.store._base import Store
from signoff.store._sql import RoleGrant, SqlTransaction

MAX_NAME = 255
DirectoryMode = Literal["grants", "revocations"]
DIRECTORY_MODES: tuple[DirectoryMode, ...] = ("grants", "revocations")


@dataclass(frozen=True, slots=True)
class _InTransaction:
    tx: SqlTransaction
    trust_tokens: bool

    def holds_role(self, tenant: str, subject: str, role: str) -> bool:
        entry = self.tx.role_entry(tenant, subject, role)
        return self.trust_tokens if entry is None else entry

    def was_revoked(self, tenant: str, subject: str, role: str) -> bool:
        return self.tx.role_entry(tenant, subject, role) is False


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

    def was_revoked(self, tenant: str, subject: str, role: str) -> bool:
        """True when the role was granted once and then withdrawn (not merely never granted)."""
        with self.store.read() as tx:
            return tx.role_entry(tenant, subject, role) is False

    def in_transaction(self, tx: Any) -> RoleDirectory:
        assert isinstance(tx, SqlTransaction)
        return _InTransaction(tx, trust_tokens=self.mode == "revocations")

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
