"""Claims of a verified token → :class:`~signoff.Principal`, as an issuer's mapping says.

Every name (subject, tenant, role, agent, client) must be 1 to 255 printable
ASCII characters, checked over the *whole* value: ``"alice\\n"`` is refused.
``act`` (RFC 8693), when present, must be an object with a non-empty ``sub``:
``act: null`` is refused rather than read as "no agent".
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from signoff._model import RESERVED_SURFACES, Principal
from signoff.exceptions import NotAuthenticated
from signoff.identity._config import ClaimMapping

MAX_ROLES = 64
_NAME = re.compile(r"[\x21-\x7e]{1,255}")
_ABSENT = object()


def principal_from_claims(
    claims: dict[str, Any],
    mapping: ClaimMapping | None = None,
    *,
    issuer: str | None = None,
    tenants: tuple[str, ...] = (),
) -> Principal:
    """The principal a verified token names; NotAuthenticated (reason ``claims``) if unclear.

    ``issuer`` is recorded as part of who the person is; ``tenants``, when given, are
    the only tenants this issuer may name (reason ``tenant`` otherwise).
    """
    mapping = mapping or ClaimMapping()
    subject = _required(claims, mapping.subject_claim, "the person")
    tenant = mapping.tenant or _required(claims, mapping.tenant_claim, "the tenant")
    if tenants and tenant not in tenants:
        raise NotAuthenticated(
            "this identity provider may not name that tenant", reason="tenant", tenant=tenant
        )
    client = _client(claims, mapping)
    actor = _actor(claims, mapping)
    if actor is None and client is not None and client in mapping.agent_clients:
        actor = client
    return Principal(
        subject=subject,
        tenant=tenant,
        roles=_roles(claims, mapping),
        actor=actor,
        client=client,
        auth_time=_auth_time(claims),
        acr=None if claims.get("acr") is None else _name(claims["acr"], "acr"),
        issuer=issuer,
    )


def _auth_time(claims: dict[str, Any]) -> datetime | None:
    """OIDC ``auth_time``: when the provider authenticated the person (seconds)."""
    value = claims.get("auth_time")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 2**33:
        raise NotAuthenticated("the auth_time claim must be a time in seconds", reason="claims")
    return datetime.fromtimestamp(value, UTC)


def claim(claims: dict[str, Any], name: str) -> Any:
    """``name`` as written, else as a dotted path into nested objects; absent → None."""
    if name in claims:
        return claims[name]
    value: Any = claims
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _required(claims: dict[str, Any], name: str, what: str) -> str:
    value = claim(claims, name)
    if value is None:
        raise NotAuthenticated(
            f"the token lacks the {name!r} claim, which names {what} for this issuer",
            reason="missing_claim",
            claim=name,
        )
    return _name(value, name)


def _roles(claims: dict[str, Any], mapping: ClaimMapping) -> frozenset[str]:
    if mapping.roles_claim is None:
        return frozenset()
    raw = claim(claims, mapping.roles_claim)
    if raw is None:
        return frozenset()
    names = raw.split(" ") if mapping.roles_format == "space" and isinstance(raw, str) else raw
    if not isinstance(names, list) or len(names) > MAX_ROLES:
        shape = "a space-separated string" if mapping.roles_format == "space" else "a list"
        raise NotAuthenticated(
            f"the {mapping.roles_claim} claim must be {shape} of names", reason="claims"
        )
    if mapping.role_map is not None:
        # Provider group names may hold spaces or anything; only mapped ones matter.
        role_map = mapping.role_map
        names = [role_map[n] for n in names if isinstance(n, str) and n in role_map]
    return frozenset(_name(role, f"{mapping.roles_claim}[]") for role in names)


def _actor(claims: dict[str, Any], mapping: ClaimMapping) -> str | None:
    act = claims.get("act", _ABSENT)
    if act is _ABSENT or not mapping.act_claim:
        return None
    if not isinstance(act, dict):
        raise NotAuthenticated("the act claim must be an object with sub", reason="claims")
    return _name(act.get("sub"), "act.sub")


def _client(claims: dict[str, Any], mapping: ClaimMapping) -> str | None:
    """The OAuth client the token was issued to (``azp``, else ``client_id``), if named."""
    for name in mapping.client_claims:
        raw = claim(claims, name)
        if raw is None:
            continue
        client = _name(raw, name)
        if client in RESERVED_SURFACES:
            raise NotAuthenticated(
                f"the client name {client!r} is reserved for signoff's own surfaces",
                reason="claims",
            )
        return client
    return None


def _name(value: Any, claim_name: str) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise NotAuthenticated(
            f"the {claim_name} claim must be 1 to 255 printable characters", reason="claims"
        )
    return value
