"""Page sign-in through the OpenID providers the deployment trusts (``login`` in an issuer).

Each ``[[signoff.issuers]]`` table with a ``[signoff.issuers.login]`` client
becomes a "Sign in with …" button; :class:`signoff.identity.OidcLogin` does
the protocol (Authlib), this adapter hands the pages a :class:`SignIn`.
"""

from __future__ import annotations

from collections.abc import Sequence

from signoff.identity import Authenticator, OidcLogin
from signoff.web._identity import LoginProvider, SignIn


class OidcLoginProvider:
    """A :class:`LoginProvider` over one :class:`OidcLogin`."""

    def __init__(self, login: OidcLogin) -> None:
        self._login = login

    @property
    def name(self) -> str:
        return self._login.name

    @property
    def label(self) -> str:
        return self._login.label

    def authorization_url(
        self,
        *,
        state: str,
        nonce: str,
        code_challenge: str,
        redirect_uri: str,
        max_age: int | None = None,
        acr_values: Sequence[str] = (),
        prompt: str | None = None,
    ) -> str:
        return self._login.authorization_url(
            state=state,
            nonce=nonce,
            code_challenge=code_challenge,
            redirect_uri=redirect_uri,
            max_age=max_age,
            acr_values=acr_values,
            prompt=prompt,
        )

    def complete(self, *, code: str, nonce: str, code_verifier: str, redirect_uri: str) -> SignIn:
        result = self._login.complete(
            code=code, nonce=nonce, code_verifier=code_verifier, redirect_uri=redirect_uri
        )
        return SignIn(result.principal, result.valid_until, result.preferences, result.id_token)


def oidc_providers(authenticator: Authenticator) -> list[LoginProvider]:
    """A sign-in button per trusted issuer that names a page client (``login``)."""
    return [
        OidcLoginProvider(OidcLogin(issuer, issuer.config.login, clock=authenticator.clock))
        for issuer in authenticator.issuers
        if issuer.config.login is not None
    ]
