"""Confirmation tokens: opaque, 256-bit, stored only as a hash.

A token's secret is ``HMAC-SHA256(key, token_id)``. The store keeps the
token id and ``sha256(secret)``, never the secret; with the server key the
gate can hand the same secret again to the one principal it is bound to
(a retried approval, an agent picking it up) without storing it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from signoff._clock import RandomSource

TOKEN_PREFIX = "sot_"  # noqa: S105 - a prefix, not a secret
MIN_KEY_BYTES = 32


class TokenMinter:
    def __init__(self, key: bytes, random: RandomSource) -> None:
        if len(key) < MIN_KEY_BYTES:
            raise ValueError(f"the token key needs at least {MIN_KEY_BYTES} bytes")
        self._key = key
        self._random = random

    def new_id(self, prefix: str) -> str:
        return prefix + self._random.token_bytes(16).hex()

    def secret(self, token_id: str) -> str:
        mac = hmac.new(self._key, b"signoff/token/v1:" + token_id.encode(), hashlib.sha256)
        return TOKEN_PREFIX + base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


def token_hash(secret: str) -> str:
    """What the store keeps and looks tokens up by."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()
