"""Every binding a confirmation token carries is compared at execute, in both token forms.

A database writer who rewrites a confirmed proposal (its arguments and digest together, its
policy version, its request key) gets no write: the token still names what was confirmed,
and execute compares each binding with the proposal it is presented for (PROTOCOL rules 7-8).
Each test asserts the provider's ledger and the order row, not only the refusal.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from signoff import Principal, Proposal
from signoff._canonical import args_digest
from signoff.exceptions import ArgsMismatch, InvalidToken
from tests.conftest import AGENT, TOKEN_FORMS, World, make_world
from tests.test_signed_tokens import _resign

GLOBEX_AGENT = Principal("u_77", "globex", actor="agent:support-bot")
GLOBEX_APPROVER = Principal("gina", "globex", frozenset({"refund_approver"}))


@pytest.fixture(params=TOKEN_FORMS)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    w = make_world(tmp_path, token_form=request.param)
    yield w
    w.store.close()
    w.shop.close()


def _rewrite(world: World, proposal: Proposal, **columns: Any) -> None:
    """Change stored proposal columns behind the gate's back, as a database writer could."""
    assignments = ", ".join(f"{name} = ?" for name in columns)
    with world.store.transaction() as tx:
        tx.run(
            f"UPDATE proposals SET {assignments} WHERE proposal_id = ?",
            (*columns.values(), proposal.proposal_id),
        )


def _refused_with_nothing_done(world: World, proposal: Proposal, token: str, match: str) -> None:
    with pytest.raises(ArgsMismatch, match=match):
        world.gate.execute(AGENT, proposal.proposal_id, token)
    assert world.ledger_amounts() == []
    assert world.refunded() == 0


def test_a_proposal_rewritten_with_a_matching_digest_is_refused(world: World) -> None:
    """Amount and digest rewritten together (the snapshot is consistent again): the token
    still carries the confirmed digest, so nothing is refunded."""
    proposal = world.propose()
    token = world.approve(proposal)
    arguments = {**proposal.arguments, "amount_minor": 100}
    digest = args_digest(proposal.tool, proposal.tool_version, arguments)
    _rewrite(world, proposal, arguments=json.dumps(arguments, sort_keys=True), args_digest=digest)
    _refused_with_nothing_done(world, proposal, token, "no longer match")


def test_a_token_minted_under_another_policy_version_is_refused(world: World) -> None:
    """The proposal's policy now says version 2; the token was issued under version 1."""
    proposal = world.propose()
    token = world.approve(proposal)
    policy = {**proposal.policy, "version": "2"}
    _rewrite(world, proposal, policy=json.dumps(policy, sort_keys=True))
    _refused_with_nothing_done(world, proposal, token, "policy version")


def test_a_token_whose_request_key_is_not_the_proposals_is_refused(world: World) -> None:
    """The proposal's request key was rewritten: the provider would see another key than
    the one the token binds, so the write is refused before the token is spent."""
    proposal = world.propose()
    token = world.approve(proposal)
    _rewrite(world, proposal, request_key=f"refund_order:acme:act_{'0' * 32}")
    _refused_with_nothing_done(world, proposal, token, "request key")
    # Nothing was consumed: restored, the same token still runs once, under its own key.
    _rewrite(world, proposal, request_key=proposal.request_key)
    world.gate.execute(AGENT, proposal.proposal_id, token)
    [entry] = world.provider.ledger("acme")
    assert entry.request_key == proposal.request_key


def test_another_tenants_token_is_answered_as_never_issued(world: World) -> None:
    """acme's token presented in globex reads exactly like a made-up one (403
    ``invalid_token``): nothing says it exists elsewhere, and neither shop refunds."""
    acme_token = world.approve(world.propose())
    globex = world.gate.propose(
        GLOBEX_AGENT,
        "refund_order",
        {"order_id": "ord_2001", "amount_minor": 100, "currency": "CNY", "reason": None},
    )
    world.approve(globex, by=GLOBEX_APPROVER)
    with pytest.raises(InvalidToken) as foreign:
        world.gate.execute(GLOBEX_AGENT, globex.proposal_id, acme_token)
    made_up = _never_issued(world, acme_token)
    with pytest.raises(InvalidToken) as never:
        world.gate.execute(GLOBEX_AGENT, globex.proposal_id, made_up)
    assert (foreign.value.status, foreign.value.to_dict()) == (
        never.value.status,
        never.value.to_dict(),
    )
    assert foreign.value.status == 403
    assert world.ledger_amounts("acme") == [] and world.ledger_amounts("globex") == []


def _never_issued(world: World, token: str) -> str:
    """A token of the same form that was never issued (a signed one: our key, unknown jti)."""
    if token.startswith("sot_"):
        return "sot_" + "A" * 43
    return _resign(world, token, lambda claims: claims.update(jti="tok_" + "0" * 32))
