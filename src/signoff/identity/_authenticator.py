"""Bearer JWT → :class:`~signoff.Principal`, over every issuer the deployment trusts.

The unverified ``iss`` only *selects* a configured issuer (exact match); that
issuer's keys, audience and clock checks then decide. ``crit`` headers are
refused; identity never comes from a request body.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import jwt
from anyio.to_thread import run_sync

from signoff._clock import Clock, SystemClock
from signoff._model import Principal
from signoff.exceptions import InvalidIssuer, NotAuthenticated
from signoff.identity._config import IdentityConfig, IssuerConfig
from signoff.identity._issuer import TrustedIssuer
from signoff.identity._keys import StaticKeys, VerificationKey

MAX_TOKEN_CHARS = 8192
REMEMBERED_TOKENS = 512
REMEMBER_FOR = timedelta(seconds=30)
"""How long a verified token is answered without verifying again (never past its ``exp``).

Shorter than the time a JWKS key set is trusted after a fetch, so remembering a
verification never trusts a key longer than fetching it did."""


@dataclass(frozen=True, slots=True)
class Verified:
    """A verified token: who it names, until when, and its claims."""

    principal: Principal
    expires_at: datetime
    claims: dict[str, Any]
    issuer: str


class HasIdentityConfig(Protocol):
    def identity_config(self) -> IdentityConfig: ...


class Authenticator:
    """Verifies bearer JWTs of the trusted issuers and maps their claims."""

    def __init__(self, issuers: Sequence[TrustedIssuer], *, clock: Clock | None = None) -> None:
        if not issuers:
            raise InvalidIssuer("at least one trusted issuer is required")
        self._issuers = {entry.issuer: entry for entry in issuers}
        self.clock = clock or SystemClock()
        self._verified: OrderedDict[bytes, tuple[Verified, datetime, datetime]] = OrderedDict()
        """sha256(token) → (its verification, when it was made, until when it is reused)."""
        self._verified_lock = threading.Lock()

    @classmethod
    def from_config(cls, config: IdentityConfig, *, clock: Clock | None = None) -> Authenticator:
        return cls([TrustedIssuer.from_config(entry) for entry in config.issuers], clock=clock)

    @classmethod
    def from_settings(
        cls, settings: HasIdentityConfig, *, clock: Clock | None = None
    ) -> Authenticator:
        return cls.from_config(settings.identity_config(), clock=clock)

    @classmethod
    def from_keys(
        cls,
        keys: Sequence[VerificationKey],
        *,
        issuer: str,
        audience: str,
        leeway_seconds: int = 30,
        clock: Clock | None = None,
    ) -> Authenticator:
        """One issuer with keys you hold (tests, embedding)."""
        config = IssuerConfig.model_construct(
            issuer=issuer, audience=audience, leeway_seconds=leeway_seconds, discovery=False
        )
        return cls([TrustedIssuer(config, StaticKeys(keys))], clock=clock)

    @property
    def issuers(self) -> tuple[TrustedIssuer, ...]:
        return tuple(self._issuers.values())

    @property
    def remote(self) -> bool:
        """True when verifying may fetch keys over the network."""
        return any(entry.keys.remote for entry in self._issuers.values())

    def authenticate(self, token: str) -> Principal:
        """Verify signature, algorithm, issuer, audience and times; map the claims."""
        return self.verify(token).principal

    def verify(self, token: str) -> Verified:
        """As :meth:`authenticate`, keeping the token's expiry and claims.

        A token verified in the last few seconds is answered from memory (each request of
        a client carries the same one): until ``REMEMBER_FOR`` has passed or its ``exp``,
        whichever comes first — every check a full verification makes would pass again.
        """
        now = self.clock.now()
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()
        remembered = self._recall(key, now)
        if remembered is not None:
            return remembered
        issuer, header = self._select(token)
        claims = issuer.verify(token, header, now)
        expires_at = datetime.fromtimestamp(float(claims["exp"]), UTC)
        verified = Verified(issuer.principal(claims), expires_at, claims, issuer.issuer)
        self._remember(key, verified, now)
        return verified

    def _recall(self, key: bytes, now: datetime) -> Verified | None:
        with self._verified_lock:
            entry = self._verified.get(key)
            if entry is None:
                return None
            verified, made, until = entry
            if not made <= now < until:
                del self._verified[key]
                return None
            self._verified.move_to_end(key)
            return verified

    def _remember(self, key: bytes, verified: Verified, now: datetime) -> None:
        until = min(verified.expires_at, now + REMEMBER_FOR)
        with self._verified_lock:
            self._verified[key] = (verified, now, until)
            self._verified.move_to_end(key)
            while len(self._verified) > REMEMBERED_TOKENS:
                self._verified.popitem(last=False)

    async def authenticate_async(self, token: str) -> Principal:
        """As :meth:`authenticate`; off the event loop only when keys may be fetched."""
        if self.remote:
            return await run_sync(self.authenticate, token)
        return self.authenticate(token)

    def verify_id_token(self, token: str, *, issuer: str, client_id: str) -> dict[str, Any]:
        """An OpenID Connect ID token of ``issuer`` for the page's client (claims only)."""
        chosen, header = self._select(token)
        if chosen.issuer != issuer:
            raise NotAuthenticated("the ID token has another issuer", reason="issuer")
        return chosen.verify(token, header, self.clock.now(), audience=client_id)

    def _select(self, token: str) -> tuple[TrustedIssuer, dict[str, Any]]:
        if not token or len(token) > MAX_TOKEN_CHARS:
            raise NotAuthenticated("the bearer token is missing or too long")
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise NotAuthenticated("the bearer token is not a JWT", reason="malformed") from None
        if "crit" in header:
            raise NotAuthenticated("critical JWT header extensions are not supported")
        claimed = unverified.get("iss")
        if claimed is None:
            raise NotAuthenticated("the token lacks the 'iss' claim", reason="missing_claim")
        issuer = self._issuers.get(claimed) if isinstance(claimed, str) else None
        if issuer is None:
            raise NotAuthenticated("the token has another issuer", reason="issuer")
        return issuer, header
