"""Approval through the identity provider (issue 22): OpenID CIBA with `signoff_proposal`
authorization_details, against the real oidc-provider of tests/identity/idp.

Under `evidence: idp` the gate refuses signoff's word alone; approving starts a backchannel
request the provider shows on the person's device (the test's device is the provider's
test hook, which calls `provider.backchannelResult`); signoff polls, records the
provider-signed token with the decision, and the exported bundle verifies offline with the
provider's keys from the trust file. A token that names another proposal is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from signoff import Decision, DecisionKind, Gate
from signoff.exceptions import EvidenceInvalid, EvidenceMismatch, EvidenceRequired
from signoff.gate._proof import GateProof
from signoff.identity import CibaClient
from signoff.policy import parse_policy
from signoff.proof import KeySet, PublicKeys, TrustRoot, verify_bundle
from tests.conftest import AGENT, APPROVER, APPROVER_2, ISSUER, REFUND, TOKEN_KEY, World, make_world
from tests.identity.idp import Idp

POLICY = '[tools.refund_order]\nevidence = "idp"\n'


class Deployment:
    """A signing gate whose refunds need the identity provider's word, and that provider."""

    def __init__(self, world: World, idp: Idp) -> None:
        self.world, self.idp = world, idp
        self.keys = KeySet.generate()
        self.ciba = CibaClient.discover(
            idp.issuer, client_id="signoff-ciba", client_secret="signoff-ciba-secret"
        )
        world.clock.set(datetime.now(UTC))  # the provider's tokens carry its real time
        self.gate = Gate(
            world.gate.catalog, world.store, token_key=TOKEN_KEY, clock=world.clock,
            directory=world.directory, policy=parse_policy(POLICY),
            proof=GateProof(self.keys, issuer=ISSUER), backchannel=self.ciba,
        )  # fmt: skip

    def device(self) -> list[dict[str, Any]]:
        """What the person's authentication device shows for each pending request."""
        return list(httpx.get(self.idp.issuer + "/test/ciba", timeout=10).json())

    def answer(self, auth_req_id: str, answer: str = "approve") -> None:
        done = httpx.post(self.idp.issuer + f"/test/ciba/{auth_req_id}", content=answer)
        assert done.status_code == 204, done.text

    def trust(self, *, with_idp: bool = True) -> TrustRoot:
        jwks = httpx.get(self.ciba.endpoints.jwks_uri, timeout=10).json()
        providers = ({"issuer": self.idp.issuer, "jwks": jwks},) if with_idp else ()
        return TrustRoot(PublicKeys(self.keys.public_jwks()), identity_providers=providers)


@pytest.fixture
def deployment(idp: Idp, tmp_path: Path) -> Iterator[Deployment]:
    world = make_world(tmp_path)
    deployment = Deployment(world, idp)
    try:
        yield deployment
    finally:
        deployment.ciba.close()
        world.store.close()
        world.shop.close()


def test_a_ciba_approval_end_to_end_verifies_offline(deployment: Deployment) -> None:
    """bob approves on his device what the device showed (this proposal, its digest and
    amount); the refund runs; the bundle verifies with the provider's keys, vouched by idp."""
    gate = deployment.gate
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    plain = Decision(DecisionKind.APPROVE, proposal.version)
    with pytest.raises(EvidenceRequired):
        gate.decide(APPROVER_2, proposal.proposal_id, plain, idempotency_key="plain")
    pending = gate.start_idp_approval(
        APPROVER_2, proposal.proposal_id, expected_version=proposal.version
    )
    assert gate.approve_through_idp(
        APPROVER_2, proposal.proposal_id, pending.auth_req_id,
        expected_version=proposal.version, idempotency_key="k1",
    ) is None  # fmt: skip
    [shown] = deployment.device()
    [detail] = shown["authorization_details"]
    assert shown["account"] == "bob" and proposal.proposal_id[-8:] in shown["binding_message"]
    assert (detail["proposal_id"], detail["args_digest"], detail["version"]) == (
        proposal.proposal_id,
        proposal.args_digest,
        proposal.version,
    )
    amount = proposal.preview.field("amount_minor")
    assert amount is not None and detail["amount"] == amount.display_value
    deployment.answer(pending.auth_req_id)
    result = gate.approve_through_idp(
        APPROVER_2, proposal.proposal_id, pending.auth_req_id,
        expected_version=proposal.version, idempotency_key="k1",
    )  # fmt: skip
    assert result is not None and result.confirmation_token is not None
    again = gate.approve_through_idp(
        APPROVER_2, proposal.proposal_id, pending.auth_req_id,
        expected_version=proposal.version, idempotency_key="k1",
    )  # fmt: skip
    assert again is not None and again.duplicate and again.audit_id == result.audit_id
    gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    [refund] = deployment.world.provider.ledger("acme")  # the provider's own ledger
    assert (refund.order_id, refund.amount_minor) == ("ord_1001", REFUND["amount_minor"])
    bundle = gate.export_bundle("acme")
    report = verify_bundle(bundle, deployment.trust(), require_evidence="idp")
    assert report.ok, report.findings
    [approval] = report.approvals
    assert (approval["subject"], approval["vouched_by"]) == ("bob", "idp")
    assert approval["issuer"] == deployment.idp.issuer
    unlisted = verify_bundle(bundle, deployment.trust(with_idp=False))
    assert {f.code for f in unlisted.findings} == {"evidence_invalid"}


def test_a_token_naming_another_proposal_or_person_is_refused(deployment: Deployment) -> None:
    """bob's provider-signed approval of one refund is no approval of another, nor alice's."""
    gate = deployment.gate
    first = gate.propose(AGENT, "refund_order", REFUND)
    other = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})
    pending = gate.start_idp_approval(APPROVER_2, first.proposal_id, expected_version=first.version)
    deployment.answer(pending.auth_req_id)
    token = deployment.ciba.poll(pending.auth_req_id)
    assert token is not None
    with pytest.raises(EvidenceMismatch, match=r"args_digest|proposal_id"):
        gate.decide(APPROVER_2, other.proposal_id,
                    Decision(DecisionKind.APPROVE, other.version, idp={"token": token}),
                    idempotency_key="x1")  # fmt: skip
    with pytest.raises(EvidenceMismatch, match="for 'bob'"):
        gate.decide(APPROVER, first.proposal_id,
                    Decision(DecisionKind.APPROVE, first.version, idp={"token": token}),
                    idempotency_key="x2")  # fmt: skip
    assert gate.proposal(AGENT, other.proposal_id).approvals == ()


def test_a_declined_request_approves_nothing(deployment: Deployment) -> None:
    """The person says no on their device: the poll is refused and the proposal still waits."""
    gate = deployment.gate
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    pending = gate.start_idp_approval(
        APPROVER_2, proposal.proposal_id, expected_version=proposal.version
    )
    deployment.answer(pending.auth_req_id, "deny")
    with pytest.raises(EvidenceInvalid, match="access_denied"):
        gate.approve_through_idp(
            APPROVER_2, proposal.proposal_id, pending.auth_req_id,
            expected_version=proposal.version, idempotency_key="k1",
        )  # fmt: skip
    assert gate.proposal(AGENT, proposal.proposal_id).approvals == ()


def test_the_http_api_answers_pending_then_records_the_approval(deployment: Deployment) -> None:
    """`POST /v1/proposals/{id}/decision` with `evidence: idp`: 202 pending with an
    auth_req_id; the same body with it is 202 until bob approves on his device, then 200; a
    plain approval is a 403 problem; an auth_req_id of another proposal is refused."""
    from fastapi.testclient import TestClient

    from tests.http.conftest import Api, assert_problem, make_app

    with TestClient(make_app(deployment.world, gate=deployment.gate)) as client:
        api = Api(client.app, client, deployment.world)  # type: ignore[arg-type]
        proposal = api.propose()
        assert_problem(api.decide(proposal, by=APPROVER_2), 403, "evidence_required")
        started = api.decide(proposal, by=APPROVER_2, evidence="idp")
        assert started.status_code == 202, started.text
        pending = started.json()
        assert pending["status"] == "pending" and pending["auth_req_id"]
        again = {"evidence": "idp", "auth_req_id": pending["auth_req_id"]}
        assert api.decide(proposal, by=APPROVER_2, key="d1", **again).status_code == 202
        deployment.answer(pending["auth_req_id"])
        done = api.decide(proposal, by=APPROVER_2, key="d1", **again)
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "confirmed"
        token = api.pick_up(proposal["proposal_id"])
        assert api.execute(proposal["proposal_id"], token).status_code == 200
        other = api.propose(order_id="ord_1002")
        stale = api.decide(other, by=APPROVER_2, **again)
        assert stale.status_code == 403 and stale.json()["code"] in {
            "evidence_invalid", "evidence_mismatch"
        }  # fmt: skip


def test_the_page_refuses_a_click_under_evidence_idp_with_a_page_not_a_500(
    deployment: Deployment,
) -> None:
    """The confirmation page has no CIBA button yet: its Approve is refused with the reason
    (approve through the identity provider), and nothing is recorded."""
    import dataclasses

    from fastapi.testclient import TestClient

    from tests.web.conftest import BASE, Pages, make_pages_app

    world = dataclasses.replace(deployment.world, gate=deployment.gate)
    proposal = deployment.gate.propose(AGENT, "refund_order", REFUND)
    with TestClient(make_pages_app(world), base_url=BASE) as client:
        pages = Pages(client.app, client, world)  # type: ignore[arg-type]
        pages.sign_in(APPROVER_2)
        answer = pages.post_decision(proposal, pages.decision_form(proposal))
        assert answer.status_code == 403, answer.text
        assert "identity provider" in answer.text
    assert deployment.gate.proposal(AGENT, proposal.proposal_id).approvals == ()
