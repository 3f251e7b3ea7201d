"""Page sessions that ended (signed out) before their cookie expired: a revocation list."""

from __future__ import annotations

from signoff.store._sqlbase import SqlBase


class SessionQueries(SqlBase):
    def end_session(self, sid_hash: str, expires_at: int, now: int) -> None:
        """Record that the session ended; entries whose cookie has expired anyway go."""
        self.run("DELETE FROM ended_sessions WHERE expires_at <= ?", (now,))
        self.run(
            "INSERT INTO ended_sessions (sid_hash, expires_at) VALUES (?, ?) "
            "ON CONFLICT (sid_hash) DO NOTHING",
            (sid_hash, expires_at),
        )

    def session_ended(self, sid_hash: str) -> bool:
        row = self.run("SELECT 1 FROM ended_sessions WHERE sid_hash = ?", (sid_hash,)).fetchone()
        return row is not None
