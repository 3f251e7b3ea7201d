"""The signed confirmation token form (PROTOCOL rule 7's second form, rule 13).

A JWS (``typ: signoff-confirmation+jwt``) whose claims bind one confirmed
operation instance. An executor in another process checks it with the
published JWKS alone; the gate still consumes it once by ``jti``, because a
signature proves integrity, not single use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from signoff.exceptions import AudienceMismatch, InvalidToken, TokenExpired
from signoff.proof._jws import PublicKeys, sign_jws, signed_kid, verify_jws
from signoff.proof._keys import SigningKey

CONFIRMATION_TYP = "signoff-confirmation+jwt"
_STRINGS = (
    "iss", "aud", "sub", "tenant", "jti", "resource", "args_digest", "policy_version",
    "request_key",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ConfirmationClaims:
    """What one confirmation binds; ``op`` is the tool and its version, times in seconds."""

    iss: str
    aud: str
    sub: str
    act: str | None
    tenant: str
    jti: str
    tool: str
    tool_version: str
    resource: str
    args_digest: str
    policy_version: str
    request_key: str
    iat: int
    exp: int

    def to_claims(self) -> dict[str, Any]:
        claims = asdict(self)
        claims["op"] = {"tool": claims.pop("tool"), "version": claims.pop("tool_version")}
        actor = claims.pop("act")
        if actor is not None:
            claims["act"] = {"sub": actor}  # RFC 8693 actor claim
        return claims


def sign_confirmation(key: SigningKey, claims: ConfirmationClaims) -> str:
    return sign_jws(key, claims.to_claims(), typ=CONFIRMATION_TYP)


def verify_confirmation(
    token: str,
    keys: PublicKeys,
    *,
    audience: str,
    now: int,
    issuer: str | None = None,
) -> ConfirmationClaims:
    """The claims of a valid token for ``audience`` at ``now`` (seconds), or a refusal.

    ``InvalidToken`` for a key, algorithm, signature or claim problem,
    ``AudienceMismatch`` for another executor's token, ``TokenExpired`` once
    ``now >= exp``.
    """
    claims = verify_jws(token, keys, typ=CONFIRMATION_TYP)
    parsed = _parse(claims)
    kid = str(signed_kid(token))
    refusal = keys.window(kid).refusal(kid, "token", parsed.iat)
    if refusal is not None:
        raise InvalidToken(refusal)
    if issuer is not None and parsed.iss != issuer:
        raise InvalidToken(f"issued by {parsed.iss!r}, not {issuer!r}")
    if parsed.aud != audience:
        raise AudienceMismatch("the token is meant for another executor")
    if now >= parsed.exp:
        raise TokenExpired("this confirmation expired; ask for a new proposal")
    return parsed


def _parse(claims: dict[str, Any]) -> ConfirmationClaims:
    for name in _STRINGS:
        if not isinstance(claims.get(name), str) or not claims[name]:
            raise InvalidToken(f"the token has no valid {name!r} claim")
    for name in ("iat", "exp"):
        if type(claims.get(name)) is not int:
            raise InvalidToken(f"the token has no integer {name!r} claim")
    op = claims.get("op")
    if not isinstance(op, dict) or not all(isinstance(op.get(k), str) for k in ("tool", "version")):
        raise InvalidToken("the token has no valid 'op' claim")
    act = claims.get("act")
    if act is not None and not (isinstance(act, dict) and isinstance(act.get("sub"), str)):
        raise InvalidToken("the token's 'act' claim is not an RFC 8693 actor")
    return ConfirmationClaims(
        **{name: claims[name] for name in (*_STRINGS, "iat", "exp")},
        act=None if act is None else act["sub"],
        tool=op["tool"],
        tool_version=op["version"],
    )
