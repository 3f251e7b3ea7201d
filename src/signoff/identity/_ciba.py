"""Approval through the identity provider: OpenID CIBA with Rich Authorization Requests.

signoff, a confidential client of the approver's identity provider, starts a backchannel
authentication request (OpenID CIBA Core 1.0, poll mode) for the person (``login_hint``:
their subject) with ``authorization_details`` of type ``signoff_proposal`` (RFC 9396) and a
``binding_message``; the provider authenticates the person on their own device and shows
them both; signoff polls the token endpoint. The access token it returns is a JWT the
provider signed (RFC 9068) carrying the approved ``authorization_details``: it becomes the
decision's evidence, checked by the gate and again offline (``signoff.proof._idp``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from signoff.exceptions import EvidenceInvalid, InvalidIssuer
from signoff.proof._idp import IdentityProvider

CIBA_GRANT = "urn:openid:params:grant-type:ciba"
PENDING_ERRORS = ("authorization_pending", "slow_down")
TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class CibaPending:
    """A started request: poll with ``auth_req_id`` no faster than every ``interval`` seconds."""

    auth_req_id: str
    expires_in: int
    interval: int = 5


@dataclass(frozen=True, slots=True)
class CibaEndpoints:
    issuer: str
    backchannel_authentication_endpoint: str
    token_endpoint: str
    jwks_uri: str


class CibaClient:
    """signoff's client at one identity provider, for backchannel approvals."""

    def __init__(
        self,
        endpoints: CibaEndpoints,
        *,
        client_id: str,
        client_secret: str,
        http: httpx.Client | None = None,
    ) -> None:
        self.endpoints = endpoints
        self._auth = (client_id, client_secret)
        self._http = http or httpx.Client(timeout=TIMEOUT_SECONDS)
        self._provider: IdentityProvider | None = None

    @classmethod
    def discover(
        cls, issuer: str, *, client_id: str, client_secret: str, http: httpx.Client | None = None
    ) -> CibaClient:
        """Read the provider's endpoints from its OpenID discovery document."""
        http = http or httpx.Client(timeout=TIMEOUT_SECONDS)
        url = issuer.rstrip("/") + "/.well-known/openid-configuration"
        try:
            document = http.get(url).raise_for_status().json()
        except (httpx.HTTPError, ValueError) as exc:
            http.close()
            raise InvalidIssuer(f"cannot read {url} ({exc}) — check the issuer URL") from None
        if document.get("issuer") != issuer:
            raise InvalidIssuer(f"{url} names issuer {document.get('issuer')!r}, not {issuer!r}")
        names = ("backchannel_authentication_endpoint", "token_endpoint", "jwks_uri")
        missing = [name for name in names if not isinstance(document.get(name), str)]
        if missing:
            raise InvalidIssuer(
                f"{issuer} does not offer {', '.join(missing)} — enable CIBA at the provider"
            )
        endpoints = CibaEndpoints(issuer, *(document[name] for name in names))
        return cls(endpoints, client_id=client_id, client_secret=client_secret, http=http)

    def close(self) -> None:
        self._http.close()

    def provider(self) -> IdentityProvider:
        """The provider's signing keys (its ``jwks_uri``, read once), to check tokens it signed."""
        if self._provider is None:
            self._provider = self.fetch_provider()
        return self._provider

    def fetch_provider(self) -> IdentityProvider:
        """The provider's current signing keys, read now (after it rotated them)."""
        try:
            jwks = self._http.get(self.endpoints.jwks_uri).raise_for_status().json()
        except (httpx.HTTPError, ValueError) as exc:
            raise EvidenceInvalid(f"cannot read the identity provider's keys ({exc})") from None
        return IdentityProvider.from_entry(
            {"issuer": self.endpoints.issuer, "jwks": jwks}, where=self.endpoints.jwks_uri
        )

    def start(
        self,
        *,
        login_hint: str,
        authorization_details: Sequence[Mapping[str, Any]],
        binding_message: str,
        scope: str = "openid",
    ) -> CibaPending:
        """Ask the provider to have the person approve ``authorization_details`` on their device."""
        form = {
            "scope": scope,
            "login_hint": login_hint,
            "binding_message": binding_message,
            "authorization_details": json.dumps(list(authorization_details)),
        }
        answer = self._post(self.endpoints.backchannel_authentication_endpoint, form)
        if "auth_req_id" not in answer:
            raise EvidenceInvalid(_refusal("the identity provider refused the request", answer))
        return CibaPending(
            str(answer["auth_req_id"]),
            int(answer.get("expires_in", 0)),
            int(answer.get("interval", 5)),
        )

    def poll(self, auth_req_id: str) -> str | None:
        """The provider-signed access token once the person approved; None while pending."""
        answer = self._post(
            self.endpoints.token_endpoint, {"grant_type": CIBA_GRANT, "auth_req_id": auth_req_id}
        )
        if answer.get("error") in PENDING_ERRORS:
            return None
        token = answer.get("access_token")
        if not isinstance(token, str):
            raise EvidenceInvalid(_refusal("the identity provider did not vouch", answer))
        return token

    def _post(self, url: str, form: Mapping[str, str]) -> dict[str, Any]:
        try:
            response = self._http.post(url, data=dict(form), auth=self._auth)
            answer = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise EvidenceInvalid(f"the identity provider did not answer ({exc})") from None
        if not isinstance(answer, dict):
            raise EvidenceInvalid("the identity provider's answer is not a JSON object")
        return answer


def _refusal(what: str, answer: Mapping[str, Any]) -> str:
    error = str(answer.get("error") or "no token")
    detail = str(answer.get("error_description") or "")[:200]
    return f"{what}: {error}{' — ' + detail if detail else ''}"
