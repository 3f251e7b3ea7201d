"""Where the gate asks, at execution time, whether approvers still hold their roles."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Protocol


class RoleDirectory(Protocol):
    def holds_role(self, tenant: str, subject: str, role: str) -> bool: ...


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
