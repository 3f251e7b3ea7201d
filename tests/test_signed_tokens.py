"""The signed token form at the gate: verified, consumed once by jti, attacks refused."""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from signoff import Decision, DecisionKind
from signoff.exceptions import AlreadyConsumed, AudienceMismatch, Expired, InvalidToken
from signoff.gate._proof import GateProof, TokenForm
from signoff.proof import CONFIRMATION_TYP, KeySet, PublicKeys
from signoff.verify import verify_confirmation_token
from tests.conftest import AGENT, APPROVER, ISSUER, World, make_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form="signed")
    yield w
    w.store.close()
    w.shop.close()


def _proof(world: World) -> GateProof:
    proof = world.gate._ctx.proof
    assert proof is not None
    return proof


def _claims(token: str) -> dict[str, Any]:
    return jwt.decode(token, options={"verify_signature": False})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _resign(world: World, token: str, change: Callable[[dict[str, Any]], None]) -> str:
    """The same claims with ``change`` applied, signed with the deployment's real key."""
    claims = _claims(token)
    change(claims)
    key = _proof(world).keys.active_key
    head = {"kid": key.kid, "typ": CONFIRMATION_TYP}
    return jwt.encode(claims, key.private_key, algorithm="EdDSA", headers=head)


def test_signed_token_is_a_jws_a_downstream_service_verifies(world: World) -> None:
    """The token verifies with the JWKS alone, binds the protocol claims, and runs once."""
    proposal = world.propose()
    token = world.approve(proposal)
    keys = PublicKeys(_proof(world).keys.public_jwks())
    now = int(world.clock.now().timestamp())
    claims = verify_confirmation_token(token, keys, audience="signoff", issuer=ISSUER, now=now)
    assert (claims.sub, claims.act, claims.tenant) == ("u_42", "agent:support-bot", "acme")
    assert (claims.tool, claims.resource) == ("refund_order", proposal.resource_id)
    assert claims.args_digest == proposal.args_digest
    assert claims.request_key == proposal.request_key
    world.gate.execute(AGENT, proposal.proposal_id, token)
    with pytest.raises(AlreadyConsumed):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == [("ord_1001", 19900)]


def test_the_same_token_is_handed_again(world: World) -> None:
    """A retried approval and the agent's pick-up return the very same JWS."""
    proposal = world.propose()
    token = world.approve(proposal)
    again = world.gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="k1",
    )
    assert again.duplicate and again.confirmation_token == token
    assert world.gate.confirmation_token(AGENT, proposal.proposal_id) == token


def _refused(world: World, token: str, error: type[Exception], match: str | None = None) -> None:
    """Presenting ``token`` for the one proposal is refused; the provider never ran."""
    [proposal] = world.gate.proposals(AGENT)
    with pytest.raises(error, match=match):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []
    assert world.refunded() == 0


@pytest.fixture
def token(world: World) -> str:
    return world.approve(world.propose())


def test_wrong_kid_refused(world: World, token: str) -> None:
    """A kid this deployment does not publish: refused, no refund."""
    header, payload, signature = token.split(".")
    head = json.loads(base64.urlsafe_b64decode(header + "=="))
    head["kid"] = "not-our-key"
    _refused(world, ".".join([_b64(json.dumps(head).encode()), payload, signature]), InvalidToken)


def test_alg_other_than_the_keys_refused(world: World, token: str) -> None:
    """ES256 under our EdDSA kid, and alg none: refused, no refund."""
    kid = _proof(world).keys.active
    head = {"kid": kid, "typ": CONFIRMATION_TYP}
    es = jwt.encode(_claims(token), ec.generate_private_key(ec.SECP256R1()), "ES256", head)
    _refused(world, es, InvalidToken)
    none = ".".join([_b64(json.dumps({"alg": "none", **head}).encode()), token.split(".")[1], ""])
    _refused(world, none, InvalidToken)


def test_expired_signed_token_refused(world: World, token: str) -> None:
    """Past exp on the server clock: refused, no refund."""
    world.clock.advance(timedelta(days=2))
    _refused(world, token, Expired)


def test_other_audience_refused(world: World, token: str) -> None:
    """A token our key signed for another executor: refused here, no refund."""
    _refused(world, _resign(world, token, lambda c: c.update(aud="payments")), AudienceMismatch)


def test_edited_claims_refused(world: World, token: str) -> None:
    """A changed amount digest with the old signature: refused, no refund."""
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["args_digest"] = "0" * 64
    edited = ".".join([header, _b64(json.dumps(claims).encode()), signature])
    _refused(world, edited, InvalidToken, "signature")


def test_claims_that_differ_from_the_record_refused(world: World, token: str) -> None:
    """Even validly signed, a token naming another resource than its jti's record: refused."""
    forged = _resign(world, token, lambda c: c.update(resource="order:ord_1002"))
    _refused(world, forged, InvalidToken, "differ")


def test_another_deployments_key_refused(world: World, token: str) -> None:
    """The same claims signed by another deployment's key: refused, no refund."""
    other = KeySet.generate().active_key
    head = {"kid": other.kid, "typ": CONFIRMATION_TYP}
    _refused(world, jwt.encode(_claims(token), other.private_key, "EdDSA", head), InvalidToken)
    head = {"kid": _proof(world).keys.active, "typ": CONFIRMATION_TYP}
    _refused(world, jwt.encode(_claims(token), other.private_key, "EdDSA", head), InvalidToken)


@pytest.mark.parametrize(
    ("deployment", "tools", "signed"),
    [("opaque", {}, False), ("opaque", {"refund_order": "signed"}, True), ("signed", {}, True)],
)
def test_the_token_form_follows_the_tools_setting_and_is_handed_again_alike(
    tmp_path: Path, deployment: TokenForm, tools: dict[str, TokenForm], signed: bool
) -> None:
    """A signing deployment may keep opaque tokens, or sign only some tools; the agent's
    pick-up hands the same token in the same form, and it executes once."""
    world = make_world(tmp_path, token_form="signed")
    proof = GateProof(KeySet.generate(), issuer=ISSUER, token_form=deployment, tool_forms=tools)
    world.gate._ctx = dataclasses.replace(world.gate._ctx, proof=proof)
    try:
        proposal = world.propose()
        token = world.approve(proposal)
        assert (token.count(".") == 2) is signed and token.startswith("sot_") is not signed
        assert world.gate.confirmation_token(AGENT, proposal.proposal_id) == token
        world.gate.execute(AGENT, proposal.proposal_id, token)
        assert world.ledger_amounts() == [("ord_1001", 19900)]
    finally:
        world.store.close()
        world.shop.close()
