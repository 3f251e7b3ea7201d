"""Where the gate asks whether a person holds a role *now* (PROTOCOL rule 11).

A token's ``roles`` claim says what the identity provider granted when the
token was issued; the directory says what holds now. The gate requires both:
revoking a role in either place stops the person at their next request and
stops every execution attempt their approval would start.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable


class RoleDirectory(Protocol):
    def holds_role(self, tenant: str, subject: str, role: str) -> bool: ...


@runtime_checkable
class TransactionalDirectory(Protocol):
    """A directory kept in the gate's own store: asked inside the open transaction.

    So a check sees the same snapshot as the step it guards, and never waits for a
    second connection from a pool the step already holds one of.
    """

    def in_transaction(self, tx: Any) -> RoleDirectory: ...


@runtime_checkable
class DelegatingDirectory(Protocol):
    """A directory that knows who stands in for whom (out of office): a delegation of a role
    to another person of the tenant for a window. A delegate holds the role *through* the
    delegator, who must still hold it themselves; delegations do not chain."""

    def delegated_roles(self, tenant: str, subject: str) -> frozenset[str]: ...

    def delegator_of(self, tenant: str, subject: str, role: str) -> str | None:
        """Whom ``subject`` stands in for with ``role`` now, when they do not hold it
        themselves; ``None`` otherwise."""
        ...


@runtime_checkable
class ExplainingDirectory(Protocol):
    """A directory that can tell a role never granted from one revoked (better refusals)."""

    def was_revoked(self, tenant: str, subject: str, role: str) -> bool: ...


class StaticRoleDirectory:
    """An in-memory directory (demo, tests, or fed from your identity provider)."""

    def __init__(self, grants: Iterable[tuple[str, str, str]] = ()) -> None:
        self._grants: set[tuple[str, str, str]] = set(grants)
        self._lock = threading.Lock()

    def holds_role(self, tenant: str, subject: str, role: str) -> bool:
        with self._lock:
            return (tenant, subject, role) in self._grants

    def grant(self, tenant: str, subject: str, role: str) -> None:
        with self._lock:
            self._grants.add((tenant, subject, role))

    def revoke(self, tenant: str, subject: str, role: str) -> None:
        with self._lock:
            self._grants.discard((tenant, subject, role))
