"""Over HTTP: the JWKS, signed tokens through the API, signed receipts beside plain ones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signoff.http import Settings
from signoff.http._settings import SettingsError, load_settings
from signoff.http._signing import gate_proof
from signoff.proof import KeySet, PublicKeys, verify_receipt
from tests.conftest import AGENT, World, make_world
from tests.http.conftest import Api, auth, make_app


@pytest.fixture
def signed(tmp_path: Path) -> Iterator[Api]:
    world = make_world(tmp_path, token_form="signed")
    app = make_app(world)
    with TestClient(app) as client:
        yield Api(app, client, world)
    world.store.close()
    world.shop.close()


def test_jwks_publishes_public_keys_only(signed: Api) -> None:
    """GET /.well-known/jwks.json: every key's public half, cacheable, no private member."""
    response = signed.client.get("/.well-known/jwks.json")
    assert response.status_code == 200
    assert "max-age" in response.headers["cache-control"]
    [key] = response.json()["keys"]
    assert key["kty"] == "OKP" and key["alg"] == "EdDSA" and "d" not in key and "y" not in key


def test_jwks_is_404_when_nothing_is_signed(api: Api) -> None:
    """A gate without signing keys publishes no JWKS."""
    assert api.client.get("/.well-known/jwks.json").status_code == 404


def test_signed_flow_over_http_returns_a_verifiable_signed_receipt(signed: Api) -> None:
    """A JWS token goes through the API once; the receipt verifies with the published JWKS."""
    proposal = signed.propose()
    token = signed.approve(proposal)
    assert token.count(".") == 2 and len(token) > 512
    response = signed.execute(proposal["proposal_id"], token)
    assert response.status_code == 200, response.text
    body = response.json()
    jwks = PublicKeys(signed.client.get("/.well-known/jwks.json").json())
    report = verify_receipt(body["signed_receipt"], jwks)
    assert report.ok, report.findings
    again = signed.client.get(
        f"/v1/executions/{body['execution']['execution_id']}", headers=auth(AGENT)
    )
    assert again.json()["signed_receipt"] == body["signed_receipt"]
    assert signed.world.ledger_amounts() == [("ord_1001", 19900)]
    replay = signed.execute(proposal["proposal_id"], token)
    assert replay.status_code == 409 and replay.json()["code"] == "already_consumed"


def test_opaque_deployment_has_no_signed_receipt(api: Api, world: World) -> None:
    """Without signing keys the plain receipt stands alone."""
    proposal = api.propose()
    body = api.execute(proposal["proposal_id"], api.approve(proposal)).json()
    assert body["receipt"]["status"] == "succeeded" and body["signed_receipt"] is None


def test_settings_build_the_signing_setup(tmp_path: Path) -> None:
    """Key file, token forms per tool, checkpoint cadence, log name: from SIGNOFF_* variables."""
    keys = tmp_path / "keys.json"
    KeySet.generate().save(keys)
    env = {
        "SIGNOFF_SIGNING_KEYS_FILE": str(keys),
        "SIGNOFF_TOKEN_FORM": "opaque",
        "SIGNOFF_TOKEN_FORM_TOOLS": "refund_order=signed",
        "SIGNOFF_CHECKPOINT_EVENTS": "16",
        "SIGNOFF_LOG_NAME": "signoff.example.com",
    }
    proof = gate_proof(load_settings(env=env))
    assert proof is not None
    assert proof.form_for("refund_order") == "signed" and proof.form_for("x") == "opaque"
    assert proof.checkpoint_events == 16
    assert proof.origin("acme") == "signoff.example.com/acme"


def test_signed_tokens_without_keys_do_not_start(tmp_path: Path) -> None:
    """token_form=signed outside demo mode names the missing key file; a bad file too."""
    settings = Settings(token_form="signed", jwt_issuer="i", token_key=b"k" * 32, catalog="a:b")
    assert any("SIGNOFF_SIGNING_KEYS_FILE" in gap for gap in settings.missing())
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(SettingsError, match="signing key"):
        load_settings(env={"SIGNOFF_SIGNING_KEYS_FILE": str(bad)}).signing_keyset()
    with pytest.raises(SettingsError, match="LOG_NAME"):
        load_settings(env={"SIGNOFF_LOG_NAME": "has space"})


def test_demo_mode_signs_with_a_generated_key() -> None:
    """--demo without a key file still signs receipts and checkpoints."""
    proof = gate_proof(Settings(demo=True))
    assert proof is not None and proof.token_form == "opaque"


def test_signer_refusals_are_counted_by_code() -> None:
    """The app's ``GateProof.on_refusal``: one Prometheus sample per refusal code."""
    from signoff.exceptions import CheckpointInconsistent, EventUnauthenticated
    from signoff.http._metrics import Metrics

    metrics = Metrics()
    for refusal in (
        CheckpointInconsistent("x"),
        CheckpointInconsistent("y"),
        EventUnauthenticated("z"),
    ):
        metrics.signer_refused(refusal)
    text = metrics.render()[0].decode()
    assert 'signoff_signer_refusals_total{code="checkpoint_inconsistent"} 2.0' in text
    assert 'signoff_signer_refusals_total{code="event_unauthenticated"} 1.0' in text
