"""Request changes over the API, to the agent (its status tool), and on the page."""

from __future__ import annotations

from signoff.agents import AgentTools
from tests.conftest import AGENT, APPROVER, REFUND
from tests.http.conftest import Api, auth
from tests.web.conftest import Pages, hidden_fields, pages  # noqa: F401 - the fixture


def test_request_changes_over_the_api_then_the_agent_supersedes(api: Api) -> None:
    proposal = api.propose()
    response = api.decide(
        proposal,
        decision="request_changes",
        reason="half only",
        suggestion={"amount_minor": 9950},
    )
    assert response.status_code == 200, response.text
    view = response.json()["proposal"]
    assert view["status"] == "changes_requested"
    assert view["changes_requested"] == {"note": "half only", "fields": {"amount_minor": 9950}}
    assert view["approvals"][0]["decision"] == "request_changes"
    seen = api.client.get(f"/v1/proposals/{proposal['proposal_id']}", headers=auth(AGENT)).json()
    assert seen["changes_requested"]["fields"] == {"amount_minor": 9950}
    body = {
        "tool": "refund_order",
        "arguments": {**REFUND, "amount_minor": 9950},
        "supersedes": proposal["proposal_id"],
    }
    created = api.client.post("/v1/proposals", json=body, headers=auth(AGENT))
    assert created.status_code == 201, created.text
    assert created.json()["supersedes"] == proposal["proposal_id"]
    again = api.client.post("/v1/proposals", json=body, headers=auth(AGENT))
    assert again.status_code == 201  # answering a returned proposal twice is the agent's call
    token = api.approve(created.json())
    assert api.execute(created.json()["proposal_id"], token).status_code == 200
    assert api.world.ledger_amounts() == [("ord_1001", 9950)]


def test_the_agents_status_tool_tells_it_what_to_change(api: Api) -> None:
    proposal = api.propose()
    api.decide(proposal, decision="request_changes", reason="use the right order")
    status = AgentTools(api.world.gate).status(AGENT, proposal["proposal_id"]).payload
    assert status["status"] == "changes_requested"
    assert status["changes_requested"] == {"note": "use the right order", "fields": {}}
    assert "supersedes" in status["next_step"] and "never be approved" in status["next_step"]


def test_request_changes_on_the_page_and_the_diff_on_the_new_one(pages: Pages) -> None:  # noqa: F811
    gate = pages.world.gate
    old = gate.propose(AGENT, "refund_order", REFUND)
    pages.sign_in(APPROVER)
    page = pages.client.get(f"/ui/proposals/{old.proposal_id}").text
    fields = {
        **hidden_fields(page, "changes"),
        "changes_note": "refund half",
        "suggest.amount_minor": "9950",
    }
    done = pages.client.post(f"/ui/proposals/{old.proposal_id}/decision", data=fields)
    assert done.status_code == 200 and 'id="changes-requested"' in done.text
    returned = gate.proposal(APPROVER, old.proposal_id)
    assert returned.changes_requested is not None
    assert returned.changes_requested.suggestion == {
        "note": "refund half",
        "fields": {"amount_minor": 9950},
    }
    new = gate.propose(
        AGENT, "refund_order", {**REFUND, "amount_minor": 9950}, supersedes=old.proposal_id
    )
    html = pages.client.get(f"/ui/proposals/{new.proposal_id}").text
    section = html.split('id="replaced"', 1)[1].split("</section>", 1)[0]
    assert "amount_minor" in section and "<code>19900</code>" in section
    assert "<code>9950</code>" in section and "refund half" in section
