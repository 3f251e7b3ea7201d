"""Who is calling: identity tokens verified against the issuers a deployment trusts.

Shared by the API (``signoff.http``), the confirmation pages (``signoff.web``)
and MCP over HTTP (``signoff.mcp_server``). Keys come from PEM files, a JWKS
file, a JWKS URL or OIDC discovery; several issuers may be trusted at once,
each with its own :class:`ClaimMapping` (tenant, roles, agent, client).
See ``docs/IDENTITY.md``. What a person holds *now* is the role directory's
answer (:class:`StoreRoleDirectory`, PROTOCOL rule 11).
"""

# Imported on first use (PEP 562, as in ``signoff/__init__.py``): the CLI reads settings
# and mints development tokens without importing FastAPI, the MCP SDK or Authlib.
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signoff.identity._authenticator import Authenticator
    from signoff.identity._ciba import CibaClient, CibaPending
    from signoff.identity._claims import principal_from_claims
    from signoff.identity._config import (
        ClaimMapping,
        IdentityConfig,
        IssuerConfig,
        LoginClient,
        PublicKey,
        identity_config,
        issuer_config,
        parse_issuers,
    )
    from signoff.identity._dev import mint_dev_token
    from signoff.identity._directory import DirectoryMode, StoreRoleDirectory
    from signoff.identity._discovery import Discovery, ProviderMetadata
    from signoff.identity._issuer import TrustedIssuer
    from signoff.identity._keys import VerificationKey, load_jwks
    from signoff.identity._login import LoginResult, OidcLogin

__all__ = [
    "Authenticator",
    "CibaClient",
    "CibaPending",
    "ClaimMapping",
    "DirectoryMode",
    "Discovery",
    "IdentityConfig",
    "IssuerConfig",
    "LoginClient",
    "LoginResult",
    "OidcLogin",
    "ProviderMetadata",
    "PublicKey",
    "StoreRoleDirectory",
    "TrustedIssuer",
    "VerificationKey",
    "identity_config",
    "issuer_config",
    "load_jwks",
    "mint_dev_token",
    "parse_issuers",
    "principal_from_claims",
]


def __getattr__(name: str) -> object:
    """Import a public name on first use, from the module its line above names."""
    from signoff._lazy import resolve

    return resolve(__name__, __file__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
