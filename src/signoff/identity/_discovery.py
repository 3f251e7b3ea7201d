"""OpenID Connect discovery: an issuer's metadata from ``/.well-known/openid-configuration``.

Fetched once, on first need, and kept; the document's ``issuer`` must equal
the configured one exactly (OpenID Connect Discovery 1.0, section 4.3), so a
look-alike metadata document cannot point signoff at another key set. After a
failed fetch the next try waits ``retry_after_seconds``: while the provider is
down, requests are refused at once instead of each waiting for a timeout.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from signoff.exceptions import NotAuthenticated

WELL_KNOWN = "/.well-known/openid-configuration"


@dataclass(frozen=True, slots=True)
class ProviderMetadata:
    issuer: str
    jwks_uri: str
    authorization_endpoint: str | None = None
    token_endpoint: str | None = None
    end_session_endpoint: str | None = None


class Discovery:
    """The metadata of one issuer, fetched lazily and once (thread-safe)."""

    def __init__(
        self,
        issuer: str,
        *,
        timeout_seconds: float,
        retry_after_seconds: float = 10,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._timeout = timeout_seconds
        self._retry_after = retry_after_seconds
        self._monotonic = monotonic
        self._metadata: ProviderMetadata | None = None
        self._failed_at: float | None = None
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.issuer.rstrip("/") + WELL_KNOWN

    def metadata(self) -> ProviderMetadata:
        with self._lock:
            if self._metadata is None:
                failed = self._failed_at
                if failed is not None and self._monotonic() - failed < self._retry_after:
                    raise _unavailable("the identity provider's metadata could not be fetched")
                try:
                    self._metadata = self.fetch()
                except NotAuthenticated:
                    self._failed_at = self._monotonic()
                    raise
            return self._metadata

    def jwks_uri(self) -> str:
        return self.metadata().jwks_uri

    def fetch(self) -> ProviderMetadata:
        """One GET of the discovery document, checked."""
        try:
            response = httpx.get(self.url, timeout=self._timeout, follow_redirects=False)
            response.raise_for_status()
            document: Any = response.json()
        except (httpx.HTTPError, ValueError):
            raise _unavailable("the identity provider's metadata cannot be fetched now") from None
        return _metadata(document, self.issuer)


def _unavailable(message: str) -> NotAuthenticated:
    return NotAuthenticated(message, reason="keys_unavailable")


def _metadata(document: Any, issuer: str) -> ProviderMetadata:
    if not isinstance(document, dict) or document.get("issuer") != issuer:
        raise NotAuthenticated(
            "the identity provider's metadata names another issuer", reason="keys_unavailable"
        )
    jwks_uri = document.get("jwks_uri")
    if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
        raise NotAuthenticated(
            "the identity provider's metadata has no jwks_uri", reason="keys_unavailable"
        )
    return ProviderMetadata(
        issuer=issuer,
        jwks_uri=jwks_uri,
        authorization_endpoint=_url(document.get("authorization_endpoint")),
        token_endpoint=_url(document.get("token_endpoint")),
        end_session_endpoint=_url(document.get("end_session_endpoint")),
    )


def _url(value: Any) -> str | None:
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None
