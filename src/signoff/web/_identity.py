"""Who may sign in to the pages: a verified JWT, an OIDC login hook, or a demo user.

The pages act as the same principals as the API (sub, tenant, roles). A token
carrying ``act`` is an agent's and is refused: agents never use this page. The
OIDC hook is an interface only; a deployment supplies a :class:`LoginProvider`
through :func:`signoff.web.install_ui`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from signoff._model import PAGE_SURFACE, Principal
from signoff.exceptions import NotAuthenticated
from signoff.identity import Authenticator


@dataclass(frozen=True, slots=True)
class DemoUser:
    principal: Principal
    description: str


def _demo(subject: str, tenant: str, roles: tuple[str, ...], description: str) -> DemoUser:
    return DemoUser(Principal(subject, tenant, frozenset(roles)), description)


DEMO_USERS: tuple[DemoUser, ...] = (
    _demo(
        "alice",
        "acme",
        ("refund_approver", "account_approver"),
        "approver: decides acme's refunds and account suspensions",
    ),
    _demo("dave", "acme", ("auditor",), "auditor: reads history, decides nothing"),
    _demo("carol", "acme", (), "acme employee without the approver role"),
    _demo("u_42", "acme", (), "customer: the agent asks on their behalf"),
    _demo("gina", "globex", ("refund_approver",), "approver of another tenant (globex)"),
)


def demo_user(subject: object) -> DemoUser | None:
    return next((u for u in DEMO_USERS if u.principal.subject == subject), None)


@dataclass(frozen=True, slots=True)
class SignIn:
    """A verified person and how long their session may last."""

    principal: Principal
    valid_until: datetime
    preferences: dict[str, str] = field(default_factory=dict)
    """The identity token's ``locale`` and ``zoneinfo`` (how the pages speak and tell time)."""
    id_token: str = ""
    """The provider-signed ID token of an OIDC sign-in (evidence for a vouched enrolment)."""


def sign_in_with_jwt(authenticator: Authenticator, token: str) -> SignIn:
    """Verify the JWT with the API's own authenticator; refuse an agent's token.

    The session remembers the client the token was issued to: decisions made in it
    came through that client as well as the page (PROTOCOL rule 14).
    """
    from signoff.identity._login import preferences_of

    verified = authenticator.verify(token.strip())
    signed = sign_in_person(verified.principal, verified.expires_at)
    principal = dataclasses.replace(
        signed.principal, client=PAGE_SURFACE, signed_in_client=verified.principal.client
    )
    return SignIn(principal, signed.valid_until, preferences_of(verified.claims))


def sign_in_person(principal: Principal, valid_until: datetime) -> SignIn:
    if principal.actor is not None:
        raise NotAuthenticated(
            "this token is an agent's (it has an act claim); agents never use this page",
            reason="agent_token",
        )
    return SignIn(principal, valid_until)


class LoginProvider(Protocol):
    """An OpenID Connect login hook (authorization code flow with PKCE).

    The pages generate ``state``, ``nonce`` and the PKCE pair, keep them in
    the signed session, send the browser to :meth:`authorization_url` and,
    when it comes back to ``/ui/sign-in/oidc/<name>/callback`` with the same
    ``state``, call :meth:`complete`. ``complete`` exchanges the code,
    verifies the ID token (issuer, audience, expiry, ``nonce``) and maps its
    claims to a person (with ``auth_time`` and ``acr`` when the token has them),
    or raises :class:`~signoff.exceptions.NotAuthenticated`. For a step-up the
    pages pass ``max_age`` and ``acr_values`` to :meth:`authorization_url`, to
    send to the provider as OIDC asks (they are never passed otherwise); to vouch
    for a passkey's enrolment, ``max_age=0`` and ``prompt="login"``, and they keep
    the :class:`SignIn`'s ``id_token`` as the enrolment's evidence.
    """

    @property
    def name(self) -> str:
        """URL-safe identifier, e.g. ``corp``."""
        ...

    @property
    def label(self) -> str:
        """Button text, e.g. ``Sign in with Corp SSO``."""
        ...

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
    ) -> str: ...

    def complete(
        self, *, code: str, nonce: str, code_verifier: str, redirect_uri: str
    ) -> SignIn: ...
