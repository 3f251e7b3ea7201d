"""Confirmation tokens: stored by hash, consumed by one conditional update."""

from __future__ import annotations

from dataclasses import dataclass

from signoff.store._sqlbase import SqlBase

TOKEN_COLUMNS = (
    "token_id, proposal_id, tenant, subject, actor, audience, operation, "  # noqa: S105
    "resource_id, args_digest, policy_version, request_key, issued_at, expires_at, status"
)


@dataclass(frozen=True, slots=True)
class TokenRecord:
    token_id: str
    proposal_id: str
    tenant: str
    subject: str
    actor: str | None
    audience: str
    operation: str
    resource_id: str
    args_digest: str
    policy_version: str
    request_key: str
    issued_at: int
    expires_at: int
    status: str


class TokenQueries(SqlBase):
    def insert_token(self, token: TokenRecord, token_hash: str) -> None:
        self.run(
            "INSERT INTO tokens (token_id, token_hash, proposal_id, tenant, subject, actor, "
            "audience, operation, resource_id, args_digest, policy_version, request_key, "
            "issued_at, expires_at, status) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                token.token_id,
                token_hash,
                token.proposal_id,
                token.tenant,
                token.subject,
                token.actor,
                token.audience,
                token.operation,
                token.resource_id,
                token.args_digest,
                token.policy_version,
                token.request_key,
                token.issued_at,
                token.expires_at,
                token.status,
            ),
        )

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        known = ("token_hash", token_hash)
        if known in self._known:
            return self._known[known]  # type: ignore[no-any-return]
        row = self.run(
            f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE token_hash = ?",
            (token_hash,),
        ).fetchone()
        return None if row is None else TokenRecord(*row)

    def token_id_for(self, proposal_id: str) -> str | None:
        row = self.run(
            "SELECT token_id FROM tokens WHERE proposal_id = ? AND status = 'issued'",
            (proposal_id,),
        ).fetchone()
        return None if row is None else str(row[0])

    def revoke_token(self, proposal_id: str) -> bool:
        return (
            self.run(
                "UPDATE tokens SET status = 'revoked' WHERE proposal_id = ? AND status = 'issued'",
                (proposal_id,),
            ).rowcount
            == 1
        )

    def token(self, token_id: str) -> TokenRecord | None:
        known = ("token_id", token_id)
        if known in self._known:
            return self._known[known]  # type: ignore[no-any-return]
        row = self.run(
            f"SELECT {TOKEN_COLUMNS} FROM tokens WHERE token_id = ?",
            (token_id,),
        ).fetchone()
        return None if row is None else TokenRecord(*row)
