"""Server settings: command-line flags > ``SIGNOFF_*`` environment > a TOML file.

:class:`Settings` is a pydantic-settings model: each field is typed, checked
and documented once, and its environment variable is ``SIGNOFF_<FIELD>``.
``Settings(...)`` takes the values it is given; :func:`load_settings` layers
the three sources. Every bad or missing value is reported in one
:class:`SettingsError`, never replaced by a default. Secrets (the token key,
the HS256 secret) are held as bytes and never printed.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Field, StringConstraints, ValidationError
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from signoff._paths import default_database_url
from signoff.exceptions import ConfigurationError, SigningKeyError
from signoff.gateway._config import UpstreamSpec, parse_upstreams
from signoff.http._settings_values import (
    PUBLIC_ALGORITHMS,
    PublicKey,
    lower,
    parse_key,
    parse_names,
    parse_public_keys,
    parse_rate,
    parse_time_zones,
    parse_tool_forms,
    parse_url,
)
from signoff.identity._config import (
    IdentityConfig,
    IssuerConfig,
    identity_config,
    issuer_config,
    parse_issuers,
)

if TYPE_CHECKING:
    from signoff.proof import KeySet

ENV_PREFIX = "SIGNOFF_"

# Public, fixed development keys: anyone can mint tokens with them, so they are
# used only with --demo, which refuses to pretend it is a production server.
DEMO_JWT_SECRET = hashlib.sha256(b"signoff demo: development JWT secret, never production").digest()
DEMO_TOKEN_KEY = hashlib.sha256(b"signoff demo: development token key, never production").digest()
DEMO_ISSUER = "signoff-demo"
# The demo's approval surfaces (PROTOCOL rule 14): the page, the seed's legacy CRM,
# in-band MCP, and tokens that name no client (so `signoff dev-token` works as shown).
DEMO_SURFACES = ("api", "jdk8-crm", "mcp", "page", "slack", "teams")

__all__ = [
    "DEMO_ISSUER",
    "DEMO_JWT_SECRET",
    "DEMO_TOKEN_KEY",
    "ENV_PREFIX",
    "PUBLIC_ALGORITHMS",
    "PublicKey",
    "Settings",
    "SettingsError",
    "load_settings",
    "parse_key",
]


class SettingsError(ConfigurationError, ValueError):
    """The configuration is incomplete or contradictory; the server does not start."""

    code = "invalid_settings"


Text = Annotated[str, StringConstraints(min_length=1)]
LogName = Annotated[str, StringConstraints(min_length=1, pattern=r"^[^\s+]+$")]
TokenFormSetting = Literal["opaque", "signed"]
Key = Annotated[bytes | None, BeforeValidator(parse_key)]
Seconds = Annotated[int, Field(ge=0)]


class Settings(BaseSettings):
    """What ``signoff serve`` (and the other commands) run with; see docs/OPERATIONS.md."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, extra="forbid", frozen=True, validate_default=True, strict=False
    )

    database_url: Text = Field(
        default_factory=default_database_url,
        description="Database URL (postgresql://…) or SQLite path.",
    )
    host: Text = Field("127.0.0.1", description="Interface to bind.")
    port: Annotated[int, Field(ge=0, le=65535)] = Field(8000, description="Port to bind.")
    workers: Annotated[int, Field(ge=1)] = Field(1, description="Worker processes.")
    demo: bool = Field(False, description="Demo shop, seeded data, public development keys.")
    environment: Annotated[Literal["production", "development"], BeforeValidator(lower)] = Field(
        "production", description="`development` allows `signoff dev-token` with an HS256 key."
    )
    token_key: Key = Field(
        None, repr=False, description="Confirmation-token key: hex or base64, >= 32 bytes."
    )
    audience: Text = Field("signoff", description="Executor audience of confirmation tokens.")
    catalog: Text | None = Field(
        None, description="`module:factory` returning a signoff.Catalog (your tools)."
    )
    jwt_issuer: Text | None = Field(None, description="`iss` every identity token must carry.")
    jwt_audience: Text = Field("signoff", description="`aud` every identity token must carry.")
    jwt_hs256_secret: Key = Field(
        None, repr=False, description="HS256 secret (development), hex or base64, >= 32 bytes."
    )
    jwt_public_keys: Annotated[
        tuple[PublicKey, ...], NoDecode, BeforeValidator(parse_public_keys)
    ] = Field((), description="`ALG:path.pem[#kid],…` (RS256, PS256, ES256, EdDSA).")
    jwt_jwks_file: Path | None = Field(None, description="A JWK set file of public keys.")
    jwt_leeway_seconds: Seconds = Field(30, description="Clock leeway for `exp`/`nbf`.")
    jwt_tenants: Annotated[tuple[str, ...], NoDecode, BeforeValidator(parse_names)] = Field(
        (),
        description="Tenants the `SIGNOFF_JWT_*` issuer may name, comma-separated; empty: any.",
    )
    issuers: Annotated[tuple[IssuerConfig, ...], NoDecode, BeforeValidator(parse_issuers)] = Field(
        (),
        description="Trusted identity providers: `[[signoff.issuers]]` tables, or a JSON "
        "array of them (docs/IDENTITY.md).",
    )
    ciba_issuer: Annotated[str | None, BeforeValidator(parse_url)] = Field(
        None,
        description="The identity provider approvals under `evidence: idp` go through "
        "(OpenID CIBA, poll mode; docs/IDENTITY.md).",
    )
    ciba_client_id: str | None = Field(None, description="signoff's CIBA client id there.")
    ciba_client_secret: str | None = Field(None, repr=False, description="That client's secret.")
    max_body_bytes: Annotated[int, Field(ge=1)] = Field(
        64 * 1024, description="Largest request body accepted."
    )
    request_read_seconds: Annotated[int, Field(ge=1, le=600)] = Field(
        10,
        description="Seconds a client has to send a request's headers, and then its body; "
        "slower connections are answered 408 and closed.",
    )
    log_level: Annotated[
        Literal["critical", "error", "warning", "info", "debug"], BeforeValidator(lower)
    ] = Field("info", description="critical, error, warning, info or debug.")
    public_url: Annotated[str | None, BeforeValidator(parse_url)] = Field(
        None, description="Where people reach this server (confirmation links), e.g. a proxy."
    )
    reconcile_interval_seconds: Seconds = Field(
        10, description="Seconds between each worker's reconcile passes (0: off)."
    )
    reconcile_older_than_seconds: Seconds = Field(
        60, description="Executions untouched this long are reconciled."
    )
    followup_interval_seconds: Seconds = Field(
        5,
        description="Seconds between each worker's passes over reminders, escalations and "
        "expiries (0: off).",
    )
    signing_keys: str | None = Field(
        None, repr=False, description="The signing key set as JSON (`signoff keys generate`)."
    )
    signing_keys_file: Path | None = Field(
        None, description="The signing key file: a JWK set with private keys and one `active` kid."
    )
    token_form: TokenFormSetting = Field(
        "opaque", description="Confirmation tokens: `opaque` (sot_…) or `signed` (JWS)."
    )
    token_form_tools: Annotated[
        tuple[tuple[str, TokenFormSetting], ...], NoDecode, BeforeValidator(parse_tool_forms)
    ] = Field((), description="`tool=signed,…`: the token form of particular tools.")
    log_name: LogName | None = Field(
        None,
        description="The audit log's name in checkpoint origins, `<log name>/<tenant>`; globally"
        " unique [default: the public URL's host and path, else the key file's own name].",
    )
    signer_state: Path | None = Field(
        None,
        description="The signer's state directory, what it signed last per log, never in the"
        " database [default: `<signing keys file>.state`].",
    )
    witnesses: str | None = Field(
        None,
        description='Witnesses that cosign each checkpoint: `[{"url": …, "vkey": …}]` (JSON).',
    )
    checkpoint_events: Annotated[int, Field(ge=1)] = Field(
        64, description="Checkpoint a tenant's audit log after this many new events."
    )
    checkpoint_seconds: Seconds = Field(
        60,
        description="…or when its last checkpoint is this old (after writes; serve also checks).",
    )
    log_format: Annotated[Literal["text", "json"], BeforeValidator(lower)] = Field(
        "text", description="`json`: one JSON object per line, with the request id."
    )
    tracing: bool | None = Field(
        None,
        description="OpenTelemetry traces over OTLP/HTTP (`signoff[otel]`; the `OTEL_*` "
        "variables configure the exporter) [default: on when `OTEL_EXPORTER_OTLP_ENDPOINT` "
        "is set].",
    )
    metrics_token: Annotated[str | None, StringConstraints(min_length=32)] = Field(
        None,
        repr=False,
        description="Bearer token a Prometheus scraper presents to `/metrics` (>= 32 "
        "characters); without it only a person holding `signoff_admin` may read it.",
    )
    proposal_rate_limit: Annotated[str | None, BeforeValidator(parse_rate)] = Field(
        "600/minute", description="Proposals per agent and tenant, e.g. `60/minute`; `off`."
    )
    rate_limit_storage: Text = Field(
        "memory://", description="Where the limit is counted (`limits` storage URI)."
    )
    role_directory: Annotated[
        Literal["grants", "revocations", "off"] | None, BeforeValidator(lower)
    ] = Field(
        None,
        description="Roles checked now: `grants` (default; `signoff roles grant`), "
        "`revocations` (demo and development default: token roles unless revoked) or `off` "
        "(token roles only).",
    )
    approval_surfaces: Annotated[tuple[str, ...] | None, NoDecode, BeforeValidator(parse_names)] = (
        Field(
            None,
            description="Where decisions may come from: `page`, `api` (no client), `mcp`, "
            "client ids (`azp`), comma-separated; empty: any.",
        )
    )

    upstreams: Annotated[tuple[UpstreamSpec, ...], NoDecode, BeforeValidator(parse_upstreams)] = (
        Field(
            (),
            description="Upstream MCP servers to stand in front of: a JSON object of NAME → "
            "command, URL or table; `--upstream NAME=…` adds one (docs/GATEWAY.md).",
        )
    )
    policy_file: Path | None = Field(
        None,
        description="The policy file (who approves what, docs/POLICIES.md; its `[upstreams]` "
        "tables classify upstream tools, docs/GATEWAY.md), reloaded on SIGHUP.",
    )
    time_zones: Annotated[
        tuple[tuple[str, str], ...], NoDecode, BeforeValidator(parse_time_zones)
    ] = Field(
        (),
        description="Times on the pages and in e-mails: `tenant=Area/City,…` (`*`: the rest), "
        "IANA zones; a person's `zoneinfo` claim comes first; default UTC.",
    )

    ALIASES: ClassVar[dict[str, str]] = {"db": "database_url", "database": "database_url"}

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the values given: :func:`load_settings` layers flags, env and TOML."""
        return (init_settings,)

    @property
    def development(self) -> bool:
        """Demo or development mode: the only modes where ``dev-token`` may mint tokens."""
        return self.demo or self.environment == "development"

    def effective_token_key(self) -> bytes:
        """The confirmation-token key; stable across restarts and workers, or no start."""
        if self.token_key is not None:
            return self.token_key
        if self.demo:
            return DEMO_TOKEN_KEY
        raise SettingsError(_MISSING["token_key"])

    def effective_issuer(self) -> str:
        if self.jwt_issuer is not None:
            return self.jwt_issuer
        if self.demo:
            return DEMO_ISSUER
        raise SettingsError(_MISSING["jwt_issuer"])

    def effective_role_directory(self) -> str:
        if self.role_directory is not None:
            return self.role_directory
        return "revocations" if self.development else "grants"

    def time_zone_of(self, tenant: str | None) -> str | None:
        """The tenant's zone (``SIGNOFF_TIME_ZONES``), else the ``*`` entry's, else None (UTC)."""
        zones = dict(self.time_zones)
        return zones.get(tenant or "") or zones.get("*")

    def effective_surfaces(self) -> tuple[str, ...]:
        if self.approval_surfaces is not None:
            return self.approval_surfaces
        return DEMO_SURFACES if self.demo else ()

    def effective_public_url(self) -> str:
        """Where people and clients reach ``signoff serve`` (no trailing slash): the
        ``public_url`` setting, else this host and port (a wildcard host as 127.0.0.1)."""
        if self.public_url is not None:
            return self.public_url.rstrip("/")
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host  # noqa: S104
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def effective_hs256_secret(self) -> bytes | None:
        if self.jwt_hs256_secret is not None:
            return self.jwt_hs256_secret
        return DEMO_JWT_SECRET if self.demo else None

    def signing_keyset(self) -> KeySet | None:
        """The signing keys from SIGNOFF_SIGNING_KEYS or SIGNOFF_SIGNING_KEYS_FILE, if any."""
        from signoff.proof import keyset_from_json, load_keyset  # not needed to read settings

        try:
            if self.signing_keys:
                return keyset_from_json(self.signing_keys)
            if self.signing_keys_file is not None:
                return load_keyset(self.signing_keys_file)
        except SigningKeyError as exc:
            raise SettingsError(exc.message) from None
        return None

    def missing(self) -> list[str]:
        """Every setting a production start needs and lacks, each with what to set."""
        gaps = []
        signs = "signed" in {self.token_form, *(form for _, form in self.token_form_tools)}
        if signs and not self.demo and not (self.signing_keys or self.signing_keys_file):
            gaps.append(_MISSING["signing_keys"])
        if self.token_key is None and not self.demo:
            gaps.append(_MISSING["token_key"])
        own_key = self._has_own_key()
        if self.jwt_issuer is None and not self.demo and (own_key or not self.issuers):
            gaps.append(_MISSING["jwt_issuer"])
        if not own_key and not self.issuers:
            gaps.append(_MISSING["jwt_key"])
        if self.catalog is None and not self.demo and not self.upstreams:
            gaps.append(_MISSING["catalog"])
        return gaps

    def _has_own_key(self) -> bool:
        keys = self.effective_hs256_secret(), self.jwt_public_keys or None, self.jwt_jwks_file
        return any(key is not None for key in keys)

    def identity_config(self) -> IdentityConfig:
        """Trusted issuers: the ``jwt_*`` settings' one (if it has a key), then ``issuers``."""
        own = []
        if self._has_own_key():
            own.append(
                issuer_config(
                    {
                        "issuer": self.effective_issuer(),
                        "audience": self.jwt_audience,
                        "hs256_secret": self.effective_hs256_secret(),
                        "public_keys": self.jwt_public_keys,
                        "jwks_file": self.jwt_jwks_file,
                        "leeway_seconds": self.jwt_leeway_seconds,
                        "tenants": self.jwt_tenants,
                        "discovery": False,
                    }
                )
            )
        if not own and not self.issuers:
            raise SettingsError(_MISSING["jwt_key"])
        # Each provider vouches for its own tenants only; with --demo the public demo
        # key can name any tenant anyway, so the binding would protect nothing there.
        bound = () if self.demo else self.issuers
        return identity_config([*own, *self.issuers], providers=bound)

    def check(self) -> Settings:
        """Refuse to start with settings that cannot serve safely (all gaps at once)."""
        gaps = self.missing()
        if gaps:
            raise SettingsError(
                f"{len(gaps)} setting(s) missing: "
                + "; ".join(gaps)
                + " — set them (docs/OPERATIONS.md, `signoff serve --help`) or use --demo"
            )
        self.identity_config()
        ciba = (self.ciba_issuer, self.ciba_client_id, self.ciba_client_secret)
        if any(ciba) and not all(ciba):
            raise SettingsError(
                "SIGNOFF_CIBA_ISSUER, SIGNOFF_CIBA_CLIENT_ID and SIGNOFF_CIBA_CLIENT_SECRET"
                " go together — set all three, or none"
            )
        return self


_MISSING = {
    "token_key": "SIGNOFF_TOKEN_KEY (base64 or hex, at least 32 bytes) is required outside --demo",
    "jwt_issuer": "SIGNOFF_JWT_ISSUER is required outside --demo",
    "jwt_key": "no JWT verification key: set SIGNOFF_ISSUERS, SIGNOFF_JWT_PUBLIC_KEYS, "
    "SIGNOFF_JWT_JWKS_FILE or (development) SIGNOFF_JWT_HS256_SECRET",
    "catalog": "SIGNOFF_CATALOG (module:factory) or SIGNOFF_UPSTREAMS is required outside --demo",
    "signing_keys": "signed tokens need SIGNOFF_SIGNING_KEYS_FILE (`signoff keys generate`)",
}


def load_settings(
    flags: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    config: str | Path | None = None,
) -> Settings:
    """Merge the three sources (``None`` flags count as not given); report every bad value."""
    merged: dict[str, Any] = {}
    if config is not None:
        merged.update(_from_toml(Path(config)))
    merged.update(_MappingEnv(Settings, env or {})())
    merged.update({k: v for k, v in (flags or {}).items() if v is not None})
    try:
        return Settings(**merged)
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None


class _MappingEnv(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (``os.environ``, a test's)."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls, case_sensitive=False)
        self.env_vars = {k.lower(): v for k, v in env.items() if k.upper().startswith(ENV_PREFIX)}


def _describe(error: ValidationError) -> str:
    """One line naming every refused setting, its variable, and why; never the value."""
    parts = []
    for item in error.errors(include_input=False, include_url=False):
        name = str(item["loc"][0]) if item["loc"] else "?"
        if item["type"] == "extra_forbidden":
            parts.append(f"unknown setting {name!r}")
            continue
        message = str(item["msg"]).removeprefix("Value error, ")
        parts.append(f"{ENV_PREFIX}{name.upper()}: {message}")
    return "invalid settings: " + "; ".join(parts)


def _from_toml(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read the config file {path}: {exc}") from exc
    table = document.get("signoff", document)
    if not isinstance(table, dict):
        raise SettingsError("the [signoff] table of the config file must be a table")
    values = {str(Settings.ALIASES.get(key, key)): value for key, value in table.items()}
    unknown = sorted(set(values) - set(Settings.model_fields))
    if unknown:
        raise SettingsError(f"unknown setting(s) {', '.join(map(repr, unknown))} in {path}")
    return values
