"""Which identity providers a deployment trusts, and how their claims become a Principal.

One :class:`IssuerConfig` per trusted issuer (TOML ``[[signoff.issuers]]``
tables, or ``SIGNOFF_ISSUERS`` as a JSON array of the same tables). Each names
its exact ``iss``, the audience signoff must be in ``aud``, where its keys come
from (a JWKS URL, a JWKS file, PEM files, OIDC discovery from the issuer, or —
development only — an HS256 secret) and a :class:`ClaimMapping`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from signoff._model import RESERVED_SURFACES
from signoff.exceptions import InvalidIssuer

PublicAlgorithm = Literal["RS256", "PS256", "ES256", "EdDSA"]
PUBLIC_ALGORITHMS: tuple[PublicAlgorithm, ...] = ("RS256", "PS256", "ES256", "EdDSA")
ClaimName = Annotated[str, Field(min_length=1, max_length=255)]
MIN_HS256_BYTES = 32


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A JWT verification key from a PEM file, and the one algorithm it may verify."""

    path: Path
    algorithm: str
    kid: str | None = None


class ClaimMapping(_Frozen):
    """Where the principal's parts are in an issuer's tokens.

    A claim name is looked up as written first (``https://example.com/tenant``),
    then as a dotted path into nested objects (``realm_access.roles``).
    """

    subject_claim: ClaimName = "sub"
    tenant_claim: ClaimName = "tenant"
    tenant: ClaimName | None = None
    """A fixed tenant for every token of this issuer (the claim is then not read)."""
    roles_claim: ClaimName | None = "roles"
    """Where role names are; None: tokens of this issuer carry no roles."""
    roles_format: Literal["list", "space"] = "list"
    """``list``: a JSON array of names; ``space``: one space-separated string (``scope``)."""
    role_map: dict[str, str] | None = None
    """Provider group/role name → signoff role; when set, unmapped names are dropped."""
    client_claims: tuple[ClaimName, ...] = ("azp", "client_id")
    """The OAuth client the token was issued to: the approval surface."""
    agent_clients: tuple[ClaimName, ...] = ()
    """Client ids that are agents: a token issued to one acts for its ``sub``."""
    act_claim: bool = True
    """Honour RFC 8693 ``act`` (an object with ``sub``) as the agent acting for ``sub``."""

    @field_validator("agent_clients")
    @classmethod
    def _no_page(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        reserved = RESERVED_SURFACES.intersection(value)
        if reserved:
            raise ValueError(f"{', '.join(sorted(reserved))} are reserved for signoff's surfaces")
        return value


class LoginClient(_Frozen):
    """The page's own OpenID Connect client at this issuer (authorization code + PKCE)."""

    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$")]
    client_id: ClaimName
    client_secret: str | None = Field(default=None, repr=False)
    label: str | None = None
    scopes: tuple[str, ...] = ("openid",)

    @field_validator("scopes")
    @classmethod
    def _openid(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return value if "openid" in value else ("openid", *value)


class IssuerConfig(_Frozen):
    """One trusted issuer: its keys, audience and claim mapping."""

    issuer: ClaimName
    audience: ClaimName
    jwks_url: str | None = None
    jwks_file: Path | None = None
    public_keys: tuple[PublicKey, ...] = ()
    hs256_secret: bytes | None = Field(default=None, repr=False)
    """Development only (``signoff dev-token``); never for a real provider. At least
    32 bytes, like the main secret (a short HMAC key is guessed offline)."""
    tenants: tuple[ClaimName, ...] = ()
    """The tenants this issuer may name; a token naming another is refused. Required
    when several issuers are trusted and this one reads the tenant from a claim."""
    discovery: bool | None = None
    """Read ``jwks_uri`` from ``<issuer>/.well-known/openid-configuration``.
    Defaults to on for an http(s) issuer that names no other key source."""
    algorithms: tuple[PublicAlgorithm, ...] = PUBLIC_ALGORITHMS
    claims: ClaimMapping = ClaimMapping()
    login: LoginClient | None = None
    leeway_seconds: Annotated[int, Field(ge=0, le=300)] = 30
    max_lifetime_seconds: Annotated[int, Field(ge=60, le=90 * 86400)] = 31 * 86400
    """A token whose ``exp`` lies further ahead than this is refused (absurd expiry)."""
    jwks_cache_seconds: Annotated[int, Field(ge=1)] = 300
    jwks_refresh_cooldown_seconds: Annotated[int, Field(ge=0)] = 30
    """Least time between two JWKS fetches forced by an unknown ``kid`` (key rotation)."""
    http_timeout_seconds: Annotated[float, Field(gt=0, le=60)] = 10

    @field_validator("jwks_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("https://", "http://")):
            raise ValueError("jwks_url must be an http(s) URL")
        return value

    @field_validator("hs256_secret")
    @classmethod
    def _long_secret(cls, value: bytes | None) -> bytes | None:
        if value is not None and len(value) < MIN_HS256_BYTES:
            raise ValueError(f"hs256_secret must be at least {MIN_HS256_BYTES} bytes")
        return value

    @property
    def allowed_tenants(self) -> tuple[str, ...]:
        """The tenants this issuer may name; empty: any (it is the only issuer trusted)."""
        if self.claims.tenant is not None:
            return (self.claims.tenant,)
        return self.tenants

    @model_validator(mode="after")
    def _key_sources(self) -> IssuerConfig:
        remote = (self.jwks_url is not None) + bool(self.discovery)
        static = (
            self.jwks_file is not None or bool(self.public_keys) or self.hs256_secret is not None
        )
        if remote > 1 or (remote and static):
            raise ValueError(
                f"issuer {self.issuer}: keys come from jwks_url, from discovery, or from "
                "files and secrets (jwks_file, public_keys, hs256_secret), not several"
            )
        if not remote and not static and not self.uses_discovery:
            raise ValueError(f"issuer {self.issuer}: no key source and not an http(s) issuer")
        fixed = self.claims.tenant
        if fixed is not None and self.tenants and self.tenants != (fixed,):
            raise ValueError(f"issuer {self.issuer}: claims.tenant is {fixed}; tenants must match")
        if self.login is not None and not self.uses_discovery:
            raise ValueError(f"issuer {self.issuer}: page sign-in (login) needs OIDC discovery")
        return self

    @property
    def uses_discovery(self) -> bool:
        if self.discovery is not None:
            return self.discovery
        no_source = (
            self.jwks_url is None
            and self.jwks_file is None
            and not self.public_keys
            and self.hs256_secret is None
        )
        return no_source and self.issuer.startswith(("https://", "http://"))


class IdentityConfig(_Frozen):
    """Every issuer a deployment trusts (at least one; ``iss`` values unique)."""

    issuers: tuple[IssuerConfig, ...]

    @field_validator("issuers")
    @classmethod
    def _unique(cls, value: tuple[IssuerConfig, ...]) -> tuple[IssuerConfig, ...]:
        if not value:
            raise ValueError("at least one trusted issuer (a JWT verification key) is required")
        names = [entry.issuer for entry in value]
        if len(set(names)) != len(names):
            raise ValueError("each issuer may be configured once")
        logins = [entry.login.name for entry in value if entry.login is not None]
        if len(set(logins)) != len(logins):
            raise ValueError("each page sign-in (login) needs its own name")
        return value


def parse_issuers(value: Any) -> tuple[IssuerConfig, ...]:
    """``[[signoff.issuers]]`` tables, or their JSON array (``SIGNOFF_ISSUERS``)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise InvalidIssuer(f"SIGNOFF_ISSUERS is not a JSON array: {exc}") from None
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise InvalidIssuer("issuers must be a list of tables")
    return tuple(issuer_config(entry) for entry in value)


def issuer_config(entry: Any) -> IssuerConfig:
    """One issuer table, checked; a bad value is an InvalidIssuer."""
    if isinstance(entry, IssuerConfig):
        return entry
    try:
        return IssuerConfig.model_validate(entry)
    except ValidationError as exc:
        raise InvalidIssuer(f"issuer configuration: {_first_error(exc)}") from None


def identity_config(
    issuers: Sequence[IssuerConfig], *, providers: Sequence[IssuerConfig] = ()
) -> IdentityConfig:
    """Check the whole set (unique issuers and login names).

    ``providers`` (the ``issuers`` tables) must each list the tenants they may name
    when more than one issuer is trusted: a provider vouches for its own tenants only.
    """
    try:
        config = IdentityConfig(issuers=tuple(issuers))
    except ValidationError as exc:
        raise InvalidIssuer(_first_error(exc)) from None
    unbound = [entry.issuer for entry in providers if not entry.allowed_tenants]
    if len(config.issuers) > 1 and unbound:
        raise InvalidIssuer(
            f"issuer {unbound[0]} may name any tenant: with several trusted issuers each "
            "lists the tenants it may name (`tenants = [...]`, or a fixed `claims.tenant`)"
        )
    return config


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {error['msg']}" if where else str(error["msg"])
