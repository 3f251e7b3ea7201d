"""Teams in-process: Adaptive Cards with Action.Execute, the Bot Connector token verified by
botbuilder, every copy updated, the same refusals as Slack."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from signoff import Decision, DecisionKind, Principal, ProposalStatus
from signoff.exceptions import SurfaceNotAllowed
from tests.channels.teams_world import TeamsWorld, card_text, connector_keys, teams_world, verbs
from tests.conftest import AGENT, APPROVER, APPROVER_2, World


@pytest.fixture
def teams(world: World) -> Iterator[TeamsWorld]:
    with teams_world(world) as tw:
        yield tw


def _execute(teams: TeamsWorld, proposal_id: str) -> None:
    gate = teams.world.gate
    token = gate.confirmation_token(AGENT, proposal_id)
    assert token is not None
    gate.execute(AGENT, proposal_id, token, idempotency_key="exec-1")


def test_a_card_goes_to_each_linked_decider_the_bot_can_reach(teams: TeamsWorld) -> None:
    """The card carries the full preview; untrusted text is a TextRun (no markdown)."""
    teams.link("alice", APPROVER)
    assert teams.say("alice").status_code == 200  # installs / writes: the bot may now reach her
    assert "You decide here as alice" in teams.standin.texts_to("a:chat-alice")[-1]
    teams.propose()
    assert teams.notify() == 1
    [card] = teams.standin.cards_in("a:chat-alice")
    text = card_text(card)
    assert "¥199.00" in text and "machine value: 19900" in text and "untrusted" in text
    assert verbs(card) == [
        "signoff.approve",
        "signoff.reject",
        "signoff.changes",
        "open:Open the page",
    ]
    rationale = [b for b in card["body"] if "Approve now" in str(b)]
    assert rationale[0]["type"] == "RichTextBlock"
    assert rationale[0]["inlines"][0]["type"] == "TextRun"
    posted = teams.standin.of("POST activities")
    assert {c.authorization for c in posted} == {"Bearer entra-test-token"}


def test_approve_in_teams_end_to_end(teams: TeamsWorld) -> None:
    """Action.Execute → decision through `teams` → every copy updated → agent executes → one
    refund in the ledger."""
    teams.link("alice", APPROVER)
    teams.link("bob", APPROVER_2)
    teams.say("alice")
    teams.say("bob")
    proposal = teams.propose()
    teams.notify()
    answer = teams.click("signoff.approve", proposal, user="alice")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["statusCode"] == 200 and body["type"] == "application/vnd.microsoft.card.adaptive"
    assert "You approved" in card_text(body["value"])
    decided = teams.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.CONFIRMED
    with teams.world.store.read() as tx:
        event = [e for e in tx.audit_events() if e.kind == "decision.approved"][-1]
    assert event.payload()["surface"] == "teams"
    for chat in ("a:chat-alice", "a:chat-bob"):
        [card] = teams.standin.cards_in(chat)
        assert verbs(card) == ["open:Open"] and "alice approved at" in card_text(card)
    assert len(teams.standin.of("PUT activities")) == 2
    _execute(teams, proposal.proposal_id)
    assert teams.world.ledger_amounts() == [("ord_1001", 19900)]


def test_a_second_click_answers_what_happened(teams: TeamsWorld) -> None:
    teams.link("alice", APPROVER)
    teams.link("bob", APPROVER_2)
    proposal = teams.propose()
    teams.click("signoff.approve", proposal, user="alice")
    again = teams.click("signoff.approve", proposal, user="bob")
    assert "already decided" in card_text(again.json()["value"])
    decided = teams.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert [a.approver for a in decided.approvals] == ["alice"]


def test_reject_with_a_reason(teams: TeamsWorld) -> None:
    teams.link("alice", APPROVER)
    proposal = teams.propose()
    answer = teams.click(
        "signoff.reject", proposal, user="alice", reason_code="policy", reason="not ours"
    )
    assert answer.status_code == 200
    decided = teams.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert decided.status is ProposalStatus.DECLINED
    assert (decided.approvals[0].reason_code, decided.approvals[0].reason) == ("policy", "not ours")


def test_a_forged_or_misdirected_token_is_refused(teams: TeamsWorld) -> None:
    """Another key, another audience, another service URL, no token, an expired one: 401,
    nothing decided, nothing sent."""
    teams.link("alice", APPROVER)
    proposal = teams.propose()
    other_key, _ = connector_keys()
    tokens = [
        teams.token(key=other_key),
        teams.token(audience="another-bot"),
        teams.token(service_url="https://attacker.example/"),
        teams.token(age=3600 + 301),
        "not-a-jwt",
        "",
    ]
    from tests.channels.teams_world import activity

    for token in tokens:
        body = activity(
            "invoke",
            user="alice",
            service_url=teams.standin.service_url,
            name="adaptiveCard/action",
            value={
                "action": {
                    "type": "Action.Execute",
                    "verb": "signoff.approve",
                    "data": {"p": proposal.proposal_id, "v": proposal.version},
                }
            },
        )
        response = teams.send(body, token=token)
        assert response.status_code == 401, (token[:20], response.text)
        assert response.json()["code"] == "invalid_chat_signature"
    assert teams.world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()
    assert teams.standin.of("POST activities") == []


def test_an_unlinked_teams_user_gets_a_link_and_decides_nothing(teams: TeamsWorld) -> None:
    proposal = teams.propose()
    answer = teams.click("signoff.approve", proposal, user="mallory")
    text = card_text(answer.json()["value"])
    assert "not linked" in text and "https://signoff.example/ui/links/" in text
    assert teams.world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()


def test_a_high_risk_proposal_opens_the_page(teams: TeamsWorld) -> None:
    teams.link("alice", APPROVER)
    teams.say("alice")
    proposal = teams.propose(order_id="ord_9200", amount_minor=300000)
    teams.notify()
    [card] = teams.standin.cards_in("a:chat-alice")
    assert verbs(card) == ["open:Open to approve"]
    answer = teams.click(
        "signoff.approve", proposal, user="alice", **{"retype.amount_minor": "300000"}
    )
    assert "Nothing was decided" in card_text(answer.json()["value"])
    assert teams.world.gate.proposal(APPROVER, proposal.proposal_id).approvals == ()
    in_teams = Principal("alice", "acme", roles=frozenset({"refund_approver"}), client="teams")
    with pytest.raises(SurfaceNotAllowed):
        teams.world.gate.decide(
            in_teams,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version, retyped={"amount_minor": "300000"}),
            idempotency_key="k-teams-high",
        )
    assert teams.world.ledger_amounts() == []


def test_request_changes_with_a_note(teams: TeamsWorld) -> None:
    teams.link("alice", APPROVER)
    proposal = teams.propose()
    answer = teams.click("signoff.changes", proposal, user="alice", changes_note="wrong order")
    assert "request for changes" in card_text(answer.json()["value"])
    returned = teams.world.gate.proposal(APPROVER, proposal.proposal_id)
    assert returned.status is ProposalStatus.CHANGES_REQUESTED
    assert returned.changes_requested is not None
    assert returned.changes_requested.suggestion == {"note": "wrong order", "fields": {}}
