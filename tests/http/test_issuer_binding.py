"""Issue 23: a person is tied to the identity provider that vouched for them.

A second trusted provider used to pick up and execute a confirmation requested through
the first (same `sub`/`act`), and to name any tenant. Now each provider lists the
tenants it may name, a person is (issuer, subject), and the audit records the issuer.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import jwt
import pytest

from signoff.exceptions import InvalidIssuer
from signoff.http import Settings
from tests.conftest import APPROVER
from tests.http.conftest import assert_problem
from tests.redteam import STORES, serve

SECRET_B = "b" * 32
ACME_PROVIDER: dict[str, Any] = {
    "issuer": "https://sso.acme.example",
    "audience": "signoff",
    "hs256_secret": SECRET_B,
    "tenants": ["acme"],
}
GLOBEX_PROVIDER: dict[str, Any] = {
    "issuer": "https://sso.globex.example",
    "audience": "signoff",
    "hs256_secret": SECRET_B,
    "tenants": ["globex"],
}


def _token(issuer: str, **claims: Any) -> dict[str, str]:
    now = int(time.time())
    body = {"iss": issuer, "aud": "signoff", "iat": now, "exp": now + 300, **claims}
    return {"Authorization": f"Bearer {jwt.encode(body, SECRET_B, algorithm='HS256')}"}


def _served(store: str, tmp_path: Path) -> Any:
    return serve(store, tmp_path, issuers=[ACME_PROVIDER, GLOBEX_PROVIDER])


@pytest.mark.parametrize("store", STORES)
def test_another_providers_token_for_the_same_subject_is_not_the_requester(
    store: str, tmp_path: Path
) -> None:
    with _served(store, tmp_path) as served:
        proposal = served.proposed()  # through the demo issuer: u_42's agent
        assert served.decide(proposal, APPROVER).status_code == 200
        impostor = _token(
            ACME_PROVIDER["issuer"], sub="u_42", tenant="acme", act={"sub": "agent:support-bot"}
        )
        path = f"/v1/proposals/{proposal['proposal_id']}"
        assert_problem(
            served.client.get(f"{path}/confirmation-token", headers=impostor), 404, "not_found"
        )
        token = served.pick_up(proposal).json()["confirmation_token"]
        body = {"proposal_id": proposal["proposal_id"], "confirmation_token": token}
        refused = served.client.post(
            "/v1/executions", json=body, headers={**impostor, "Idempotency-Key": "i-1"}
        )
        assert_problem(refused, 404, "not_found")
        assert served.ledger() == []
        [created] = served.audit("proposal.created")
        assert created.payload()["issuer"] == served.settings.effective_issuer()
        [approved] = served.audit("decision.approved")
        assert approved.payload()["issuer"] == served.settings.effective_issuer()
        refusals = [e.payload() for e in served.audit("refusal")]
        assert {r["issuer"] for r in refusals} == {ACME_PROVIDER["issuer"]}
        assert served.execute(proposal, token).status_code == 200
        assert len(served.ledger()) == 1


@pytest.mark.parametrize("store", STORES)
def test_a_provider_names_only_the_tenants_it_lists(store: str, tmp_path: Path) -> None:
    with _served(store, tmp_path) as served:
        proposal = served.proposed()
        outsider = _token(
            GLOBEX_PROVIDER["issuer"], sub="gus", tenant="acme", roles=["refund_approver"]
        )
        body = {"decision": "approve", "expected_version": 1}
        refused = served.client.post(
            f"/v1/proposals/{proposal['proposal_id']}/decision",
            json=body,
            headers={**outsider, "Idempotency-Key": "o-1"},
        )
        assert_problem(refused, 401, "not_authenticated")
        assert served.audit("decision.approved") == []
        own = _token(GLOBEX_PROVIDER["issuer"], sub="gus", tenant="globex")
        assert served.client.get("/v1/inbox", headers=own).status_code == 200


def test_with_several_providers_each_must_list_its_tenants(tmp_path: Path) -> None:
    unbound = {k: v for k, v in ACME_PROVIDER.items() if k != "tenants"}
    settings = Settings(
        token_key=b"t" * 32,
        jwt_issuer="https://own.example",
        jwt_hs256_secret=b"s" * 32,
        catalog="signoff.demo:demo_catalog",
        issuers=[unbound, GLOBEX_PROVIDER],
        database_url=str(tmp_path / "s.db"),
    )
    with pytest.raises(InvalidIssuer, match="tenants"):
        settings.check()
    bound = settings.model_copy(update={"issuers": settings.issuers[1:]})
    bound.identity_config()  # one provider beside the deployment's own key: bound, fine


def test_a_trusted_issuers_hs256_secret_has_32_bytes() -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        Settings(demo=True, issuers=[{**ACME_PROVIDER, "hs256_secret": "x"}])
