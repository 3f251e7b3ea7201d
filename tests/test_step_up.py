"""Step-up (PROTOCOL rule 9): a policy asks for a fresh, strong identity-provider sign-in.

Under ``ApprovalPolicy(max_age=…, acr_values=…)`` an approval counts only when the
approver's identity provider authenticated them at most ``max_age`` seconds before (server
clock) with one of those classes; otherwise ``step_up_required`` (401, RFC 9470's challenge
over HTTP), nothing decided. The decision records the ``acr`` and ``auth_time`` returned.
The page's round trip to a real provider is in tests/identity/test_step_up_sign_in.py.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest
from fastapi.testclient import TestClient

from signoff import (
    ApprovalPolicy,
    Catalog,
    Decision,
    DecisionKind,
    DecisionResult,
    Gate,
    Principal,
    ProposalStatus,
    ReasonCode,
    ResourceState,
    Risk,
)
from signoff.demo import RefundArgs, RefundOrder
from signoff.exceptions import StepUpRequired
from tests.conftest import AGENT, APPROVER, TOKEN_KEY, World, make_world
from tests.http.conftest import SETTINGS, auth, make_app

MFA = "urn:signoff:mfa"
MAX_AGE = 300
AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))


class StepUpRefund(RefundOrder):
    """The demo refund, approved only after a sign-in with a second factor within 5 min."""

    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(role="refund_approver", max_age=MAX_AGE, acr_values=(MFA,))


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path)
    w.gate = Gate(
        Catalog([StepUpRefund(w.shop, w.provider)]),
        w.store,
        token_key=TOKEN_KEY,
        clock=w.clock,
        directory=w.directory,
    )
    yield w
    w.store.close()
    w.shop.close()


def _signed_in(world: World, *, ago: int, acr: str | None = MFA) -> Principal:
    """alice as her identity provider authenticated her ``ago`` seconds before now."""
    return dataclasses.replace(
        APPROVER, auth_time=world.clock.now() - timedelta(seconds=ago), acr=acr
    )


def _approve(world: World, who: Principal, key: str = "a1") -> DecisionResult:
    proposal = world.gate.proposals(AGENT)[0]
    return world.gate.decide(
        who, proposal.proposal_id, Decision(DecisionKind.APPROVE, 1), idempotency_key=key
    )


def _nothing_decided(world: World) -> None:
    [proposal] = world.gate.proposals(AGENT)
    assert (proposal.status, proposal.approvals) == (ProposalStatus.AWAITING_CONFIRMATION, ())
    assert world.ledger_amounts() == []


def test_a_fresh_strong_sign_in_approves_and_is_recorded(world: World) -> None:
    """Signed in with a second factor 300 s ago (the limit itself): approved, and the
    decision event records the acr and auth_time the provider returned; it runs once."""
    proposal = world.propose()
    who = _signed_in(world, ago=MAX_AGE)
    result = _approve(world, who)
    assert result.confirmation_token is not None and who.auth_time is not None
    [event] = [
        e
        for e in world.gate.audit_events(AUDITOR, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    assert json.loads(event.data)["authentication"] == {
        "acr": MFA,
        "auth_time": int(who.auth_time.timestamp()),
    }
    world.gate.execute(AGENT, proposal.proposal_id, result.confirmation_token)
    assert world.ledger_amounts() == [("ord_1001", 19900)]


@pytest.mark.parametrize(
    ("ago", "acr", "why"),
    [
        (MAX_AGE + 1, MFA, "301 s ago"),
        (3600, MFA, "3600 s ago"),
        (-120, MFA, "ahead of the server's clock"),  # past the allowed skew
        (10, "urn:signoff:pwd", "class is urn:signoff:pwd"),
        (10, None, "class is none"),
    ],
)
def test_an_old_weak_or_impossible_sign_in_is_refused(
    world: World, ago: int, acr: str | None, why: str
) -> None:
    """Too old, from the future, or without the second factor: step_up_required with the
    policy's max_age and acr_values, nothing decided."""
    world.propose()
    with pytest.raises(StepUpRequired, match=why) as refused:
        _approve(world, _signed_in(world, ago=ago, acr=acr))
    assert refused.value.code == "step_up_required" and refused.value.status == 401
    assert refused.value.details["max_age"] == MAX_AGE
    assert refused.value.details["acr_values"] == [MFA]
    _nothing_decided(world)


def test_a_sign_in_that_does_not_say_when_is_refused(world: World) -> None:
    """No auth_time at all (a token that does not carry it): refused."""
    world.propose()
    with pytest.raises(StepUpRequired, match="does not say when"):
        _approve(world, dataclasses.replace(APPROVER, acr=MFA))
    _nothing_decided(world)


def test_a_rejection_needs_no_step_up(world: World) -> None:
    """Declining changes nothing outside signoff: no fresh sign-in is asked for it."""
    proposal = world.propose()
    declined = world.gate.decide(
        APPROVER,
        proposal.proposal_id,
        Decision(DecisionKind.REJECT, 1, ReasonCode.POLICY, "no"),
        idempotency_key="r1",
    )
    assert declined.status is ProposalStatus.DECLINED


def test_the_refusal_is_audited(world: World) -> None:
    """A refused approval is a refusal event with its code (rule 15)."""
    proposal = world.propose()
    with pytest.raises(StepUpRequired):
        _approve(world, APPROVER)
    refusals = [
        json.loads(e.data)["code"]
        for e in world.gate.audit_events(AUDITOR, proposal_id=proposal.proposal_id)
        if e.kind == "refusal"
    ]
    assert refusals == ["step_up_required"]


def test_over_http_the_answer_is_rfc_9470s_challenge(world: World) -> None:
    """A bearer token without auth_time approving over the API: 401 step_up_required with
    WWW-Authenticate error=insufficient_user_authentication, acr_values and max_age."""
    proposal = world.propose()
    with TestClient(make_app(world)) as client:
        answer = client.post(
            f"/v1/proposals/{proposal.proposal_id}/decision",
            json={"decision": "approve", "expected_version": 1},
            headers=auth(APPROVER, "k1"),
        )
    assert answer.status_code == 401
    assert answer.json()["code"] == "step_up_required"
    assert answer.json()["acr_values"] == [MFA] and answer.json()["max_age"] == MAX_AGE
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_user_authentication"')
    assert f'acr_values="{MFA}"' in challenge and f'max_age="{MAX_AGE}"' in challenge
    _nothing_decided(world)


def test_a_bearer_tokens_auth_time_and_acr_reach_the_decision(world: World) -> None:
    """An identity token carrying auth_time and acr (as an OIDC provider issues them)
    approves over the API; the decision records them."""
    proposal = world.propose()
    auth_time = int((world.clock.now() - timedelta(seconds=30)).timestamp())
    token = _token_with(auth_time=auth_time, acr=MFA)
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": "k1"}
    with TestClient(make_app(world)) as client:
        answer = client.post(
            f"/v1/proposals/{proposal.proposal_id}/decision",
            json={"decision": "approve", "expected_version": 1},
            headers=headers,
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] == "confirmed"
    [event] = [
        e
        for e in world.gate.audit_events(AUDITOR, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    assert json.loads(event.data)["authentication"] == {"acr": MFA, "auth_time": auth_time}


def _token_with(**extra: object) -> str:
    """alice's development token (HS256, as `signoff dev-token` makes it) with more claims."""
    secret = SETTINGS.effective_hs256_secret()
    assert secret is not None
    now = int(datetime.now(UTC).timestamp())
    claims = {
        "iss": SETTINGS.effective_issuer(),
        "aud": SETTINGS.jwt_audience,
        "sub": "alice",
        "tenant": "acme",
        "roles": ["refund_approver"],
        "iat": now,
        "exp": now + 600,
        **extra,
    }
    return jwt.encode(claims, secret, algorithm="HS256")


def test_the_policy_fields_are_checked_and_recorded_only_when_set() -> None:
    """max_age 0..86400, acr_values without spaces; absent, the policy's form is as before."""
    bad_fields = ({"max_age": -1}, {"max_age": 86_401}, {"max_age": True}, {"acr_values": ("a b",)})
    for bad in bad_fields:
        with pytest.raises(ValueError, match=r"max_age|acr_values"):
            ApprovalPolicy(role="r", **bad)
    plain = ApprovalPolicy(role="r").to_dict()
    assert "max_age" not in plain and "acr_values" not in plain
    stepped = ApprovalPolicy(role="r", max_age=0, acr_values=(MFA,))
    assert stepped.step_up and stepped.to_dict()["max_age"] == 0
    assert stepped.to_dict()["acr_values"] == [MFA]
