"""Slack in-process: message out with the full preview, signed clicks in, every copy updated."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Principal, ProposalStatus
from signoff.exceptions import SurfaceNotAllowed
from tests.channels.conftest import BOT, SlackWorld, action_ids, blocks_text, button, submission
from tests.conftest import AGENT, APPROVER, APPROVER_2, NO_ROLE


def _confirmed_and_executed(slack: SlackWorld, proposal_id: str) -> None:
    """The requesting agent picks up its token and runs the refund once."""
    gate = slack.world.gate
    token = gate.confirmation_token(AGENT, proposal_id)
    assert token is not None
    gate.execute(AGENT, proposal_id, token, idempotency_key="exec-1")


def test_awaiting_proposal_goes_to_each_linked_decider_with_the_full_preview(
    slack: SlackWorld,
) -> None:
    """A DM to each linked role holder: display and machine values, impact, risk, deadline,
    the rationale labelled untrusted; nobody without the role, nobody unlinked."""
    slack.link("UALICE", APPROVER)
    slack.link("UCAROL", NO_ROLE)
    proposal = slack.propose()
    assert slack.notify() == 1
    message = slack.message_to("UALICE")
    text = blocks_text(message)
    assert "¥199.00" in text and "machine value: 19900" in text and '"CNY"' in text
    assert "untrusted" in text and "Customer says *the parcel* was <empty>" in text
    assert "money leaves the company" in text and "medium risk" in text
    assert proposal.expires_at.strftime("%Y-%m-%d %H:%M:%S +00:00") in text
    assert proposal.args_digest in text
    # Untrusted text is plain_text, never mrkdwn: `*` and `<…>` cannot format or link.
    rationale = [b for b in message["blocks"] if "Customer says" in json.dumps(b)]
    assert rationale[0]["text"]["type"] == "plain_text"
    assert action_ids(message) == [
        "signoff.approve",
        "signoff.reject",
        "signoff.changes",
        "signoff.open",
    ]
    assert [c.args["channel"] for c in slack.standin.of("chat.postMessage")] == ["DUALICE"]
    assert {c.authorization for c in slack.standin.calls} == {f"Bearer {BOT}"}
    assert slack.notify() == 0 and len(slack.standin.of("chat.postMessage")) == 1


def test_approve_in_slack_records_the_decision_updates_every_copy_and_runs_once(
    slack: SlackWorld,
) -> None:
    """Signed click → decision by the linked person through `slack` → every copy redrawn
    without buttons → the agent executes → one refund in the provider's ledger."""
    slack.link("UALICE", APPROVER)
    slack.link("UBOB", APPROVER_2)
    proposal = slack.propose()
    slack.notify()
    response = slack.click("signoff.approve", proposal, user="UALICE")
    assert response.status_code == 200, response.text
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.CONFIRMED
    assert [a.approver for a in decided.approvals] == ["alice"]
    events = [
        e
        for e in slack.world.store.read().__enter__().audit_events()
        if e.kind == "decision.approved"
    ]
    assert events[-1].payload()["surface"] == "slack"
    for user in ("UALICE", "UBOB"):
        message = slack.message_to(user)
        assert action_ids(message) == ["signoff.open"]
        assert "alice approved at" in blocks_text(message)
    assert len(slack.standin.of("chat.update")) == 2
    assert "You approved" in slack.standin.ephemeral_to("UALICE")[-1]
    _confirmed_and_executed(slack, proposal.proposal_id)
    assert slack.world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_second_click_answers_what_happened_and_decides_nothing(slack: SlackWorld) -> None:
    """Bob clicks a copy after alice approved: told who decided and when; one decision."""
    slack.link("UALICE", APPROVER)
    slack.link("UBOB", APPROVER_2)
    proposal = slack.propose()
    slack.notify()
    slack.click("signoff.approve", proposal, user="UALICE")
    assert slack.click("signoff.approve", proposal, user="UBOB").status_code == 200
    told = slack.standin.ephemeral_to("UBOB")[-1]
    assert "already decided" in told and "alice approved it at" in told
    # Alice's own second click (a redelivery too) replays her decision.
    slack.click("signoff.approve", proposal, user="UALICE")
    assert "already" in slack.standin.ephemeral_to("UALICE")[-1]
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert [a.approver for a in decided.approvals] == ["alice"]


def test_a_forged_signature_is_refused_and_decides_nothing(slack: SlackWorld) -> None:
    """A body signed with another secret: 401 problem, no decision, Slack never called."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose()
    from tests.channels.conftest import signed

    value = json.dumps({"p": proposal.proposal_id, "v": proposal.version})
    body, headers = signed(
        button("signoff.approve", value, user="UALICE", channel="DUALICE"),
        at=slack.world.clock.now().timestamp(),
        secret="not-the-signing-secret-0000000000",
    )
    response = slack.client.post("/slack/events", content=body, headers=headers)
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_chat_signature"
    unsigned = slack.client.post("/slack/events", content=body)
    assert unsigned.status_code == 401
    still = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert still.status is ProposalStatus.AWAITING_CONFIRMATION and still.approvals == ()
    assert slack.standin.calls == []


def test_a_payload_older_than_five_minutes_is_refused(slack: SlackWorld) -> None:
    """A correctly signed click replayed 5 min 1 s later (server clock) decides nothing."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose()
    value = json.dumps({"p": proposal.proposal_id, "v": proposal.version})
    response = slack.post(
        button("signoff.approve", value, user="UALICE", channel="DUALICE"),
        age=timedelta(minutes=5, seconds=1),
    )
    assert response.status_code == 401
    fresh = slack.post(
        button("signoff.approve", value, user="UALICE", channel="DUALICE"),
        age=timedelta(minutes=4, seconds=59),
    )
    assert fresh.status_code == 200
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert [a.approver for a in decided.approvals] == ["alice"]


def test_an_unlinked_slack_user_is_sent_a_one_time_link_and_decides_nothing(
    slack: SlackWorld,
) -> None:
    """No link: nothing decided, a link to the page; the display name is never used."""
    proposal = slack.propose()
    payload = button(
        "signoff.approve",
        json.dumps({"p": proposal.proposal_id, "v": proposal.version}),
        user="UALICE",
        channel="DUALICE",
    )
    payload["user"]["username"] = payload["user"]["name"] = "alice"
    assert slack.post(payload).status_code == 200
    told = slack.standin.ephemeral_to("UALICE")[-1]
    assert "not linked" in told and "https://signoff.example/ui/links/" in told
    still = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert still.approvals == ()


def test_a_high_risk_proposal_links_to_the_page_and_its_buttons_are_refused(
    slack: SlackWorld,
) -> None:
    """High risk: "Open to approve", no buttons; a crafted approve click decides nothing,
    and the gate itself refuses a `slack` decision above the policy's chat_max_risk."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose(order_id="ord_9200", amount_minor=300000)
    assert proposal.risk.level.value == "high"
    slack.notify()
    message = slack.message_to("UALICE")
    assert action_ids(message) == ["signoff.open"] and "Open to approve" in blocks_text(message)
    slack.click("signoff.approve", proposal, user="UALICE")
    assert "confirmation page" in slack.standin.ephemeral_to("UALICE")[-1]
    assert slack.world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()
    in_slack = Principal("alice", "acme", roles=frozenset({"refund_approver"}), client="slack")
    with pytest.raises(SurfaceNotAllowed):
        slack.world.gate.decide(
            in_slack,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version, retyped={"amount_minor": "300000"}),
            idempotency_key="k-high",
        )
    assert slack.world.ledger_amounts() == []


def test_reject_with_a_reason_in_a_modal(slack: SlackWorld) -> None:
    """Reject opens a modal with the tool's reasons; its submission declines, copies update."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose()
    slack.notify()
    slack.click("signoff.reject", proposal, user="UALICE")
    opened = slack.standin.of("views.open")[-1].args
    view = opened["view"]
    assert opened["trigger_id"] == "trigger-UALICE-signoff.reject"
    assert "wrong_target" in json.dumps(view) and view["callback_id"] == "signoff.reject_modal"
    values = {
        "reason_code": {"value": {"type": "static_select", "selected_option": {"value": "policy"}}},
        "reason": {"value": {"type": "plain_text_input", "value": "not our policy"}},
    }
    response = slack.post(
        submission("signoff.reject_modal", view["private_metadata"], values, user="UALICE")
    )
    assert response.status_code == 200 and response.json()["response_action"] == "update"
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.DECLINED
    assert (decided.approvals[0].reason_code, decided.approvals[0].reason) == (
        "policy",
        "not our policy",
    )
    assert "alice rejected at" in blocks_text(slack.message_to("UALICE"))
    assert slack.world.ledger_amounts() == []


def test_retyping_in_a_modal_where_the_policy_asks(slack: SlackWorld) -> None:
    """Approve opens a re-type modal; a wrong value is a field error and decides nothing;
    the value as shown approves."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose("refund_order_retyped")
    slack.notify()
    slack.click("signoff.approve", proposal, user="UALICE")
    view = slack.standin.of("views.open")[-1].args["view"]
    assert view["callback_id"] == "signoff.approve_modal"

    def submit(typed: str) -> dict[str, Any]:
        values = {"retype.amount_minor": {"value": {"type": "plain_text_input", "value": typed}}}
        answer = slack.post(
            submission("signoff.approve_modal", view["private_metadata"], values, user="UALICE")
        )
        assert answer.status_code == 200
        return dict(answer.json())

    wrong = submit("¥1,990.00")
    assert wrong["response_action"] == "errors" and "retype.amount_minor" in wrong["errors"]
    assert slack.world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()
    assert submit("¥199.00")["response_action"] == "update"
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.CONFIRMED
    _confirmed_and_executed(slack, proposal.proposal_id)
    assert slack.world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_decision_on_the_page_updates_the_slack_copies(slack: SlackWorld) -> None:
    """Decided elsewhere: the notifier redraws every Slack copy from the audit event."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose()
    slack.notify()
    slack.world.approve(proposal, by=APPROVER_2)
    slack.notify()
    message = slack.message_to("UALICE")
    assert action_ids(message) == ["signoff.open"] and "bob approved at" in blocks_text(message)


def _sign_in(slack: SlackWorld, person: Principal) -> None:
    from tests.web.conftest import hidden_fields, jwt_for

    page = slack.client.get("/ui/sign-in")
    fields = hidden_fields(page.text)
    response = slack.client.post(
        "/ui/sign-in", data={**fields, "token": jwt_for(person)}, follow_redirects=False
    )
    assert response.status_code == 303, response.text


def _link_url(slack: SlackWorld, user: str) -> str:
    told = slack.standin.ephemeral_to(user)[-1]
    return (
        told[told.index("https://signoff.example") :]
        .split()[0]
        .removeprefix("https://signoff.example")
    )


def test_linking_through_the_page_sign_in_then_deciding(slack: SlackWorld) -> None:
    """Unlinked → one-time link → the person signs in on the page and confirms → linked
    (audited) → the next click decides as them; the code works once."""
    from tests.web.conftest import hidden_fields

    proposal = slack.propose()
    slack.click("signoff.approve", proposal, user="UALICE")
    path = _link_url(slack, "UALICE")
    assert slack.client.get(path, follow_redirects=False).status_code == 303  # sign in first
    _sign_in(slack, APPROVER)
    page = slack.client.get(path)
    assert page.status_code == 200 and "UALICE" in page.text
    linked = slack.client.post(path, data=hidden_fields(page.text))
    assert linked.status_code == 200 and 'id="linked"' in linked.text
    with slack.world.store.read() as tx:
        kinds = [e.kind for e in tx.audit_events()]
    assert "channel.linked" in kinds
    again = slack.client.post(path, data=hidden_fields(page.text))
    assert again.status_code == 404 and "link_code_invalid" in again.text
    slack.click("signoff.approve", proposal, user="UALICE")
    decided = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert [a.approver for a in decided.approvals] == ["alice"]


def test_a_link_code_cannot_link_a_person_of_another_tenant(slack: SlackWorld) -> None:
    """The Slack workspace belongs to acme: a globex person signing in cannot take the code."""
    from tests.conftest import OTHER_TENANT
    from tests.web.conftest import hidden_fields

    proposal = slack.propose()
    slack.click("signoff.approve", proposal, user="UMALLORY")
    path = _link_url(slack, "UMALLORY")
    _sign_in(slack, OTHER_TENANT)
    page = slack.client.get(path)
    assert page.status_code == 404
    refused = slack.client.post(path, data=hidden_fields(slack.client.get("/ui/inbox").text))
    assert refused.status_code == 404
    assert slack.channels.links.links("globex") == [] == slack.channels.links.links("acme")


def test_a_link_expires_and_then_decides_nothing(slack: SlackWorld) -> None:
    """A sign-in link lasts link_days: after it, the chat user is unlinked again."""
    proposal = slack.propose()
    slack.click("signoff.approve", proposal, user="UALICE")
    code = _link_url(slack, "UALICE").rsplit("/", 1)[-1]
    slack.channels.links.complete(code, APPROVER)
    slack.world.clock.advance(timedelta(days=30, seconds=1))
    fresh = slack.propose(order_id="ord_1002")
    slack.click("signoff.approve", fresh, user="UALICE")
    assert "not linked" in slack.standin.ephemeral_to("UALICE")[-1]
    assert slack.world.gate.proposal(APPROVER, fresh.proposal_id).approvals == ()


def test_request_changes_in_a_modal(slack: SlackWorld) -> None:
    """Request changes opens a modal (note and suggested values); its submission returns the
    proposal with a structured suggestion, and every copy says so."""
    slack.link("UALICE", APPROVER)
    proposal = slack.propose()
    slack.notify()
    slack.click("signoff.changes", proposal, user="UALICE")
    view = slack.standin.of("views.open")[-1].args["view"]
    assert view["callback_id"] == "signoff.changes_modal"
    values = {
        "note": {"value": {"type": "plain_text_input", "value": "half only"}},
        "suggest.amount_minor": {"value": {"type": "plain_text_input", "value": "9950"}},
        "suggest.reason": {"value": {"type": "plain_text_input", "value": None}},
    }
    answer = slack.post(
        submission("signoff.changes_modal", view["private_metadata"], values, user="UALICE")
    )
    assert answer.status_code == 200 and answer.json()["response_action"] == "update"
    returned = slack.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert returned.status is ProposalStatus.CHANGES_REQUESTED
    assert returned.changes_requested is not None
    assert returned.changes_requested.suggestion == {
        "note": "half only",
        "fields": {"amount_minor": 9950},
    }
    message = slack.message_to("UALICE")
    assert action_ids(message) == ["signoff.open"]
    assert "alice requested changes at" in blocks_text(message)
