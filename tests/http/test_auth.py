"""Bearer JWT identity: claims map to a Principal; every attack is a 401 problem."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
from fastapi.testclient import TestClient

from signoff import Principal
from signoff.exceptions import ConfigurationError, NotAuthenticated
from signoff.http import Authenticator, PublicKey, Settings, VerificationKey
from signoff.identity import load_jwks
from tests.conftest import AGENT, OTHER_TENANT, World
from tests.http.conftest import assert_problem, auth, make_app

ISSUER = "https://idp.example"
AUDIENCE = "signoff"
SECRET = b"s" * 32
RSA_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
RSA_PUBLIC_PEM = RSA_KEY.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
)
ED_KEY = ed25519.Ed25519PrivateKey.generate()


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "u_42",
        "tenant": "acme",
        "roles": ["support"],
        "iat": now,
        "exp": now + 300,
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], payload: dict[str, Any], secret: bytes | None) -> str:
    """A JWT assembled by hand, as an attacker would (PyJWT refuses to make these)."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    if secret is None:
        return signing_input + "."
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(signature)}"


def authenticator(*keys: VerificationKey) -> Authenticator:
    return Authenticator.from_keys(
        keys or (VerificationKey(SECRET, "HS256"),), issuer=ISSUER, audience=AUDIENCE
    )


def rs256() -> VerificationKey:
    return VerificationKey(RSA_KEY.public_key(), "RS256", "rsa-1")


def refused(auth: Authenticator, token: str) -> NotAuthenticated:
    with pytest.raises(NotAuthenticated) as caught:
        auth.authenticate(token)
    return caught.value


def test_hs256_claims_map_to_principal() -> None:
    """sub, tenant and roles become the Principal; no act means no actor."""
    token = jwt.encode(claims(), SECRET, algorithm="HS256")
    assert authenticator().authenticate(token) == Principal(
        "u_42", "acme", roles=frozenset({"support"}), issuer=claims()["iss"]
    )


def test_act_claim_becomes_actor() -> None:
    """An RFC 8693 act claim names the agent acting for sub."""
    token = jwt.encode(claims(act={"sub": "agent:support-bot"}), SECRET, algorithm="HS256")
    principal = authenticator().authenticate(token)
    assert principal.actor == "agent:support-bot"
    assert principal.subject == "u_42"


@pytest.mark.parametrize("claim", ["azp", "client_id"])
def test_client_claim_names_the_approval_surface(claim: str) -> None:
    """The OAuth client a token was issued to (azp, else client_id) becomes Principal.client."""
    token = jwt.encode(claims(**{claim: "jdk8-crm"}), SECRET, algorithm="HS256")
    assert authenticator().authenticate(token).client == "jdk8-crm"
    plain = jwt.encode(claims(), SECRET, algorithm="HS256")
    assert authenticator().authenticate(plain).client is None


def test_a_token_cannot_claim_the_page_surface() -> None:
    """'page' names the confirmation page; a bearer token claiming it is refused."""
    token = jwt.encode(claims(azp="page"), SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "claims"


def test_rs256_and_eddsa_public_keys_verify() -> None:
    """Production keys: RS256 and EdDSA tokens verify with their public keys."""
    auth = authenticator(rs256(), VerificationKey(ED_KEY.public_key(), "EdDSA"))
    rsa_token = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    ed_token = jwt.encode(claims(sub="bob"), ED_KEY, algorithm="EdDSA")
    assert auth.authenticate(rsa_token).subject == "u_42"
    assert auth.authenticate(ed_token).subject == "bob"


def test_alg_none_is_refused() -> None:
    """An unsigned token (alg none) finds no key that accepts it."""
    token = forge({"alg": "none", "typ": "JWT"}, claims(), None)
    assert refused(authenticator(), token).details["reason"] == "algorithm_not_allowed"


def test_hs_rs_key_confusion_is_refused() -> None:
    """An HS256 token keyed with the RSA public key is refused: RSA keys verify RS256 only."""
    token = forge({"alg": "HS256", "typ": "JWT"}, claims(), RSA_PUBLIC_PEM)
    assert refused(authenticator(rs256()), token).details["reason"] == "algorithm_not_allowed"
    both = authenticator(VerificationKey(SECRET, "HS256"), rs256())
    assert refused(both, token).details["reason"] == "invalid_signature"


def test_wrong_audience_is_refused() -> None:
    """A token for another audience is refused."""
    token = jwt.encode(claims(aud="another-service"), SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "audience"


def test_wrong_issuer_is_refused() -> None:
    """A token from another issuer is refused."""
    token = jwt.encode(claims(iss="https://evil.example"), SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "issuer"


def test_expired_token_is_refused() -> None:
    """exp in the past (beyond the leeway) is refused."""
    token = jwt.encode(claims(exp=int(time.time()) - 120), SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "expired"


@pytest.mark.parametrize("claim", ["iss", "aud", "exp", "sub", "tenant"])
def test_missing_required_claim_is_refused(claim: str) -> None:
    """Each of iss, aud, exp, sub and tenant is required."""
    payload = claims()
    del payload[claim]
    token = jwt.encode(payload, SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "missing_claim"


@pytest.mark.parametrize(
    "changes",
    [
        {"roles": "refund_approver"},
        {"roles": [1]},
        {"act": "agent:bot"},
        {"act": {"client": "x"}},
        {"sub": 42},
        {"tenant": "has space"},
    ],
)
def test_malformed_claims_are_refused(changes: dict[str, Any]) -> None:
    """roles must be a list of names, act an object with sub, sub and tenant names."""
    token = jwt.encode(claims(**changes), SECRET, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] in ("claims", "invalid")


def test_bad_signature_is_refused() -> None:
    """A token signed with another secret does not verify."""
    token = jwt.encode(claims(), b"x" * 32, algorithm="HS256")
    assert refused(authenticator(), token).details["reason"] == "invalid_signature"


def test_garbage_and_oversized_tokens_are_refused() -> None:
    """Not a JWT, or too long to be one we issued: refused before any crypto."""
    assert refused(authenticator(), "not-a-jwt").details["reason"] == "malformed"
    with pytest.raises(NotAuthenticated):
        authenticator().authenticate("a" * 10_000)


def test_crit_header_is_refused() -> None:
    """Critical header extensions we do not understand are refused."""
    token = jwt.encode(claims(), SECRET, algorithm="HS256", headers={"crit": ["exp"]})
    with pytest.raises(NotAuthenticated):
        authenticator().authenticate(token)


def test_unknown_kid_is_refused() -> None:
    """A kid that names no configured key finds no key."""
    token = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "other"})
    assert refused(authenticator(rs256()), token).details["reason"] == "algorithm_not_allowed"


def test_pem_and_jwks_keys_load_from_settings(tmp_path: Path) -> None:
    """Public keys come from PEM files or a JWKS file, each with its algorithm."""
    pem = tmp_path / "rsa.pem"
    pem.write_bytes(RSA_PUBLIC_PEM)
    jwk = json.loads(jwt.algorithms.OKPAlgorithm.to_jwk(ED_KEY.public_key()))
    jwks = tmp_path / "jwks.json"
    jwks.write_text(json.dumps({"keys": [{**jwk, "kid": "ed-1", "use": "sig"}]}))
    settings = Settings(
        jwt_issuer=ISSUER,
        jwt_public_keys=(PublicKey(path=pem, algorithm="RS256"),),
        jwt_jwks_file=jwks,
    )
    auth = Authenticator.from_settings(settings)
    ed_token = jwt.encode(claims(), ED_KEY, algorithm="EdDSA", headers={"kid": "ed-1"})
    assert auth.authenticate(ed_token).tenant == "acme"
    assert auth.authenticate(jwt.encode(claims(), RSA_KEY, algorithm="RS256")).tenant == "acme"


def test_pem_key_of_the_wrong_type_is_a_settings_error(tmp_path: Path) -> None:
    """An RSA key configured for EdDSA is refused at start-up."""
    pem = tmp_path / "rsa.pem"
    pem.write_bytes(RSA_PUBLIC_PEM)
    with pytest.raises(ConfigurationError):
        Authenticator.from_settings(
            Settings(jwt_issuer=ISSUER, jwt_public_keys=(PublicKey(path=pem, algorithm="EdDSA"),))
        )


def test_jwks_with_a_symmetric_key_is_refused() -> None:
    """A JWKS file may hold public keys only; an oct key would enable HS256 forgery."""
    with pytest.raises(ConfigurationError):
        load_jwks(json.dumps({"keys": [{"kty": "oct", "k": b64(SECRET)}]}))


@pytest.mark.parametrize(
    "header",
    [
        None,
        "Basic dTpw",
        "Bearer ",
        "Bearer not-a-jwt",
    ],
)
def test_http_without_valid_bearer_is_401(world: World, header: str | None) -> None:
    """Missing or malformed Authorization answers a 401 problem with WWW-Authenticate."""
    client = TestClient(make_app(world))
    headers = {} if header is None else {"Authorization": header}
    response = client.get("/v1/whoami", headers=headers)
    assert_problem(response, 401, "not_authenticated")
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_http_alg_none_and_key_confusion_are_401(world: World) -> None:
    """Through HTTP: alg none and an HS256 token keyed with the RSA public key are 401."""
    client = TestClient(make_app(world, authenticator=authenticator(rs256())))
    for token in (
        forge({"alg": "none"}, claims(), None),
        forge({"alg": "HS256"}, claims(), RSA_PUBLIC_PEM),
        jwt.encode(claims(aud="other"), RSA_KEY, algorithm="RS256"),
        jwt.encode(claims(exp=int(time.time()) - 120), RSA_KEY, algorithm="RS256"),
        jwt.encode(claims(tenant=None), RSA_KEY, algorithm="RS256"),
    ):
        response = client.get("/v1/whoami", headers={"Authorization": f"Bearer {token}"})
        assert_problem(response, 401, "not_authenticated")
    good = jwt.encode(claims(), RSA_KEY, algorithm="RS256", headers={"kid": "rsa-1"})
    assert client.get("/v1/whoami", headers={"Authorization": f"Bearer {good}"}).json() == {
        "sub": "u_42",
        "tenant": "acme",
        "roles": ["support"],
        "act": None,
    }


def test_identity_never_comes_from_the_body(world: World) -> None:
    """A body naming another tenant is an unknown field (400), never the caller's identity."""
    client = TestClient(make_app(world))
    body = {
        "tool": "refund_order",
        "arguments": {"order_id": "ord_2001", "amount_minor": 100, "currency": "CNY"},
        "tenant": "globex",
    }
    response = client.post("/v1/proposals", json=body, headers=auth(AGENT))
    problem = assert_problem(response, 400, "invalid_request")
    assert problem["errors"][0]["loc"] == ["body", "tenant"]
    assert world.gate.proposals(OTHER_TENANT) == []
