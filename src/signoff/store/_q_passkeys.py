"""Passkeys people enrolled on the page: their public keys and sign counters."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

_COLUMNS = "credential_id, tenant, subject, public_key, public_jwk, sign_count, created_at"


@dataclass(frozen=True, slots=True)
class PasskeyRecord:
    """One WebAuthn credential: COSE key for py_webauthn, JWK for offline verifiers."""

    credential_id: str
    tenant: str
    subject: str
    public_key: str
    public_jwk: str
    sign_count: int
    created_at: int


class PasskeyQueries(SqlBase):
    def insert_passkey(self, record: PasskeyRecord) -> None:
        self.run(
            f"INSERT INTO passkeys ({_COLUMNS}) VALUES (?,?,?,?,?,?,?)",
            (
                record.credential_id,
                record.tenant,
                record.subject,
                record.public_key,
                record.public_jwk,
                record.sign_count,
                record.created_at,
            ),
        )

    def passkeys_of(self, tenant: str, subject: str) -> list[PasskeyRecord]:
        rows = self.run(
            f"SELECT {_COLUMNS} FROM passkeys WHERE tenant = ? AND subject = ? ORDER BY created_at",
            (tenant, subject),
        ).fetchall()
        return [PasskeyRecord(*row) for row in rows]

    def passkey(self, credential_id: str) -> PasskeyRecord | None:
        row = self.run(
            f"SELECT {_COLUMNS} FROM passkeys WHERE credential_id = ?", (credential_id,)
        ).fetchone()
        return None if row is None else PasskeyRecord(*row)

    def advance_sign_count(self, credential_id: str, seen: int, new: int) -> bool:
        """Move the counter from ``seen`` to ``new``; a replayed assertion loses (rowcount 0)."""
        return (
            self.run(
                "UPDATE passkeys SET sign_count = ? WHERE credential_id = ? AND sign_count = ?",
                (new, credential_id, seen),
            ).rowcount
            == 1
        )
