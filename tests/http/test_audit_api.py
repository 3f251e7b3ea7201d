"""GET /v1/audit: the tenant's hash chain, for auditors only."""

from __future__ import annotations

import itertools

from signoff import Principal
from tests.conftest import AGENT, APPROVER
from tests.http.conftest import Api, assert_problem, auth

AUDITOR = Principal("audrey", "acme", roles=frozenset({"auditor"}))
GLOBEX_AUDITOR = Principal("gus", "globex", roles=frozenset({"auditor"}))


def test_auditor_reads_the_chain_of_one_proposal(api: Api) -> None:
    """Every step of the flow is an event, chained by hash, with no token secret."""
    proposal = api.propose()
    token = api.approve(proposal)
    api.execute(proposal["proposal_id"], token)
    response = api.client.get(
        f"/v1/audit?proposal_id={proposal['proposal_id']}", headers=auth(AUDITOR)
    )
    assert response.status_code == 200
    events = response.json()["events"]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "proposal.created"
    assert {"decision.approved", "token.issued", "token.consumed"} <= set(kinds)
    assert token not in response.text
    chain = api.client.get("/v1/audit", headers=auth(AUDITOR)).json()["events"]
    assert [e["seq"] for e in chain] == list(range(1, len(chain) + 1))
    assert chain[0]["prev_hash"] == "0" * 64
    for before, after in itertools.pairwise(chain):
        assert after["prev_hash"] == before["hash"]
    assert api.world.gate.verify_audit().ok


def test_whole_tenant_log_without_filter(api: Api) -> None:
    """Without proposal_id the auditor sees the tenant's chain; other tenants see nothing."""
    api.propose()
    assert api.client.get("/v1/audit", headers=auth(AUDITOR)).json()["events"]
    assert api.client.get("/v1/audit", headers=auth(GLOBEX_AUDITOR)).json() == {
        "events": [],
        "next_after": None,
    }


def test_non_auditors_are_403(api: Api) -> None:
    """Approvers and agents do not read the audit log."""
    for who in (APPROVER, AGENT):
        assert_problem(api.client.get("/v1/audit", headers=auth(who)), 403, "not_entitled")


def test_other_tenants_proposal_is_404(api: Api) -> None:
    """An auditor of another tenant guessing a proposal id gets 404."""
    proposal = api.propose()
    response = api.client.get(
        f"/v1/audit?proposal_id={proposal['proposal_id']}", headers=auth(GLOBEX_AUDITOR)
    )
    assert_problem(response, 404, "not_found")
