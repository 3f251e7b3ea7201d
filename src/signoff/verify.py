"""Verify what signoff signed, with no database and no server.

The small public facade a downstream executor or an auditor imports::

    from signoff.verify import PublicKeys, TrustRoot, verify_bundle, verify_confirmation_token
    keys = PublicKeys.from_file("jwks.json")
    claims = verify_confirmation_token(token, keys, audience="payments-executor")
    report = verify_bundle(bundle, TrustRoot.from_file("trust.json"))

It re-exports :mod:`signoff.proof`'s verifiers; nothing here touches a store. Every
verifier needs a trust root obtained apart from what it verifies (PROTOCOL rule 16).
"""

from __future__ import annotations

import time

from signoff.proof import (
    ConfirmationClaims,
    Expectation,
    Finding,
    PublicKeys,
    Report,
    TrustRoot,
    read_receipt_file,
    verify_bundle,
    verify_confirmation,
    verify_device_assertion,
    verify_receipt,
)

__all__ = [
    "ConfirmationClaims",
    "Expectation",
    "Finding",
    "PublicKeys",
    "Report",
    "TrustRoot",
    "read_receipt_file",
    "verify_bundle",
    "verify_confirmation_token",
    "verify_device_assertion",
    "verify_receipt",
]


def verify_confirmation_token(
    token: str,
    keys: PublicKeys,
    *,
    audience: str,
    issuer: str | None = None,
    now: int | None = None,
) -> ConfirmationClaims:
    """The claims of a signed confirmation token meant for ``audience``, or a refusal.

    ``now`` is Unix seconds (default: this machine's clock). Passing this check
    is not permission to execute twice: present the token to the gate, which
    consumes it once by ``jti``.
    """
    moment = int(time.time()) if now is None else now
    return verify_confirmation(token, keys, audience=audience, now=moment, issuer=issuer)
