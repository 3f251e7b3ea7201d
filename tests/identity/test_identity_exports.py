"""The deliberate public surface of signoff.identity."""

from __future__ import annotations

import signoff.identity

IDENTITY_API = {
    "DirectoryMode", "StoreRoleDirectory",
    "Authenticator", "CibaClient", "CibaPending", "ClaimMapping", "Discovery", "IdentityConfig",
    "IssuerConfig",
    "LoginClient", "LoginResult", "OidcLogin", "ProviderMetadata", "PublicKey",
    "TrustedIssuer", "VerificationKey",
    "identity_config", "issuer_config", "load_jwks", "mint_dev_token", "parse_issuers",
    "principal_from_claims",
}  # fmt: skip


def test_identity_all_is_pinned_and_sorted() -> None:
    """Adding or removing a public name of signoff.identity is a deliberate change."""
    assert set(signoff.identity.__all__) == IDENTITY_API
    assert signoff.identity.__all__ == sorted(signoff.identity.__all__)
    assert all(hasattr(signoff.identity, name) for name in IDENTITY_API)


def test_identity_imports_no_edge() -> None:
    """identity/ sits below http, web and mcp_server (LAYOUT.md): it imports none of them."""
    import pathlib

    root = pathlib.Path(signoff.identity.__file__).parent
    for module in root.glob("*.py"):
        text = module.read_text()
        for edge in ("signoff.http", "signoff.web", "signoff.mcp_server", "fastapi"):
            assert f"import {edge}" not in text and f"from {edge}" not in text, (module, edge)
