"""Vouched passkey enrolment through the page's OIDC sign-in, against the real provider.

alice signed in to the page with her provider; enrolling a passkey sends her
back to it (``max_age=0``, ``prompt=login``) with a nonce bound to the new
credential; the provider's ID token is kept in ``passkey.registered`` as the
enrolment's evidence. A refund she approves with that passkey verifies offline
against a trust file naming her provider's keys — and not without them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from fastapi.testclient import TestClient

from signoff import Decision, DecisionKind, Principal
from signoff.proof import PublicKeys, TrustRoot, enrolment_nonce, verify_bundle
from tests.conftest import AGENT, APPROVER, World, make_world
from tests.identity.idp import Idp
from tests.identity.test_page_sign_in import BASE, CALLBACK, page_idp, pages, sign_in
from tests.proof.conftest import SoftAuthenticator
from tests.web.conftest import hidden_fields

__all__ = ["page_idp"]  # the fixture, imported for this module's tests

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
HIGH = {"order_id": "ord_9200", "amount_minor": 100_000}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    """A world whose gate signs (its bundles can be exported), on the provider's clock."""
    w = make_world(tmp_path, token_form="signed")
    w.clock.set(datetime.now(UTC))
    yield w
    w.store.close()
    w.shop.close()


def _registration_challenge(page: str) -> bytes:
    found = re.search(r'data-registration-options="([^"]+)"', page)
    assert found is not None
    options = json.loads(found[1].replace("&#34;", '"').replace("&quot;", '"'))
    return bytes(jwt.utils.base64url_decode(options["challenge"]))


def _enrol(client: TestClient, device: SoftAuthenticator) -> Any:
    """Add a passkey on the page; answers the page's redirect (to the provider, or back)."""
    page = client.get("/ui/passkeys")
    assert page.status_code == 200, page.text
    credential = device.registration(
        _registration_challenge(page.text), rp_id="127.0.0.1", origin=BASE
    )
    form = {**hidden_fields(page.text), "credential": credential}
    return client.post("/ui/passkeys", data=form, follow_redirects=False)


def _trust(world: World, idp: Idp) -> TrustRoot:
    proof = world.gate.proof
    assert proof is not None
    jwks = httpx.get(idp.issuer + "/jwks", timeout=10).json()
    provider = {
        "issuer": idp.issuer,
        "jwks": jwks,
        "audiences": ["signoff-page"],
        "tenant_claim": "tenant",
    }
    return TrustRoot(PublicKeys(proof.keys.public_jwks()), identity_providers=(provider,))


def _registered(world: World) -> dict[str, Any]:
    [event] = [e for e in world.gate.audit_events(AUDITOR) if e.kind == "passkey.registered"]
    return event.payload()


def test_enrolment_asks_the_provider_again_and_keeps_its_id_token(
    world: World, page_idp: Idp
) -> None:
    """Enrolling sends alice to her provider with max_age=0, prompt=login and the nonce
    bound to the credential; only after she signs in again is the passkey kept, with the
    provider's ID token as evidence; her device-signed refund then verifies offline
    with her provider's keys, and fails without them."""
    client = pages(world, page_idp)
    assert sign_in(client, page_idp, "alice").status_code == 303
    device = SoftAuthenticator()

    to_provider = _enrol(client, device)
    assert to_provider.status_code == 303, to_provider.text
    asked = dict(httpx.URL(to_provider.headers["location"]).params)
    expected_nonce = enrolment_nonce(
        tenant="acme",
        subject="alice",
        credential_id=device.credential_id,
        public_key=device.public_jwk(),
    )
    assert (asked["max_age"], asked["prompt"], asked["nonce"]) == ("0", "login", expected_nonce)
    assert world.gate.passkeys(APPROVER) == []  # nothing kept before the provider vouches

    with httpx.Client(timeout=10) as browser:
        back = page_idp.finish_login(browser, to_provider.headers["location"], "alice", CALLBACK)
    done = client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert done.headers["location"].startswith("/ui/passkeys?added=1")
    [passkey] = world.gate.passkeys(APPROVER)
    assert passkey.credential_id == device.credential_id
    evidence = _registered(world)["evidence"]
    assert evidence["kind"] == "idp"
    claims = jwt.decode(evidence["id_token"], options={"verify_signature": False})
    assert (claims["iss"], claims["sub"], claims["nonce"]) == (
        page_idp.issuer,
        "alice",
        expected_nonce,
    )

    proposal = world.propose(**HIGH)
    assertion = device.approval(proposal.proposal_id, proposal.args_digest)
    for derived in ("public_key", "version"):
        assertion.pop(derived)
    decision = Decision(DecisionKind.APPROVE, proposal.version, device=assertion)
    result = world.gate.decide(APPROVER, proposal.proposal_id, decision, idempotency_key="d1")
    assert result.confirmation_token is not None
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    assert world.ledger_amounts() == [("ord_9200", 100_000)]

    bundle = world.gate.export_bundle("acme")
    report = verify_bundle(bundle, _trust(world, page_idp))
    assert report.ok, report.findings
    assert report.device_signatures == 1
    proof = world.gate.proof
    assert proof is not None
    without = verify_bundle(bundle, PublicKeys(proof.keys.public_jwks()))
    assert [f.code for f in without.findings] == ["device_enrolment_unvouched"]


def test_a_sign_in_as_someone_else_enrols_nothing(world: World, page_idp: Idp) -> None:
    """alice enrols, but carol signs in at the provider: refused, no passkey kept."""
    client = pages(world, page_idp)
    sign_in(client, page_idp, "alice")
    to_provider = _enrol(client, SoftAuthenticator())
    assert to_provider.status_code == 303
    with httpx.Client(timeout=10) as browser:
        back = page_idp.finish_login(browser, to_provider.headers["location"], "carol", CALLBACK)
    done = client.get("/ui/sign-in/oidc/corp/callback", params=back, follow_redirects=False)
    assert done.status_code in (401, 403), done.text
    assert "someone else" in done.text
    assert world.gate.passkeys(APPROVER) == []
    assert not [e for e in world.gate.audit_events(AUDITOR) if e.kind == "passkey.registered"]
