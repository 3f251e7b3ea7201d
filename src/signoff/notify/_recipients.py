"""E-mail recipients that follow the role directory (PROTOCOL rule 11).

Who may decide a proposal is who holds its role *now*: the role directory in
signoff's own store. People granted the role there are mailed at their address
from the address book; people whose role was revoked there are never mailed,
even if the address book still lists them under the role.
"""

from __future__ import annotations

from signoff.notify._email import AddressBook
from signoff.store._base import Store


class DirectoryRecipients:
    """An :class:`AddressBook` corrected by the role directory kept in ``store``."""

    def __init__(self, store: Store, book: AddressBook) -> None:
        self._store = store
        self._book = book

    def for_role(self, tenant: str, role: str) -> list[str]:
        with self._store.read() as tx:
            entries = [e for e in tx.role_grants(tenant) if e.role == role]
        granted = {e.subject for e in entries if not e.revoked}
        revoked = {e.subject for e in entries if e.revoked}
        withdrawn = {a for s in revoked for a in self._book.for_person(tenant, s)}
        found = {a for s in granted for a in self._book.for_person(tenant, s)}
        found.update(a for a in self._book.for_role(tenant, role) if a not in withdrawn)
        return sorted(found - withdrawn)

    def for_person(self, tenant: str, subject: str) -> list[str]:
        return self._book.for_person(tenant, subject)
