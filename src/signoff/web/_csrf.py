"""CSRF: a synchronizer token per session, required on every POST of the pages.

The token is an HMAC of the session id, so it needs no server storage, changes
when someone signs in, and cannot be computed by another site. SameSite=Strict
cookies are the second wall, not the only one.
"""

from __future__ import annotations

import hmac

from signoff.web._session import WebSession, b64url, derive_key

FIELD = "csrf_token"


class CsrfGuard:
    def __init__(self, key: bytes) -> None:
        self._key = derive_key(key, "csrf")

    def token(self, session: WebSession) -> str:
        return b64url(hmac.new(self._key, session.sid.encode(), "sha256").digest())

    def matches(self, session: WebSession | None, submitted: object) -> bool:
        """True only for this session's own token; a missing session never matches."""
        if session is None or not isinstance(submitted, str):
            return False
        return hmac.compare_digest(submitted.encode(), self.token(session).encode())
