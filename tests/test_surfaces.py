"""Approval surfaces (PROTOCOL rule 14): decisions only through the listed client systems."""

from __future__ import annotations

import dataclasses

import pytest

from signoff import (
    ApprovalPolicy,
    Catalog,
    Decision,
    DecisionKind,
    Gate,
    ProposalStatus,
    ResourceState,
    Risk,
)
from signoff.demo import RefundArgs, RefundOrder, demo_catalog
from signoff.exceptions import SurfaceNotAllowed
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY, World


def _gate(world: World, surfaces: tuple[str, ...]) -> Gate:
    return Gate(
        demo_catalog(world.shop, world.provider),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        surfaces=surfaces,
    )


def _approve(gate: Gate, world: World, client: str | None, key: str) -> None:
    proposal = world.propose()
    gate.decide(
        dataclasses.replace(APPROVER, client=client),
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key=key,
    )


def test_listed_surfaces_decide_and_others_are_refused_and_audited(world: World) -> None:
    gate = _gate(world, ("page", "jdk8-crm"))
    _approve(gate, world, "jdk8-crm", "crm-1")
    _approve(gate, world, "page", "page-1")
    for client in ("other-crm", None):
        proposal = world.propose()
        with pytest.raises(SurfaceNotAllowed) as caught:
            gate.decide(
                dataclasses.replace(APPROVER, client=client),
                proposal.proposal_id,
                Decision(DecisionKind.APPROVE, proposal.version),
                idempotency_key=f"x-{client}",
            )
        assert caught.value.status == 403
        assert caught.value.details["allowed"] == ["jdk8-crm", "page"]
        after = gate.proposal(AGENT, proposal.proposal_id)
        assert (after.status, after.approvals) == (ProposalStatus.AWAITING_CONFIRMATION, ())
        auditor = dataclasses.replace(APPROVER, roles=frozenset({"auditor"}), subject="dave")
        [event] = [
            e
            for e in gate.audit_events(auditor, proposal_id=proposal.proposal_id)
            if e.kind == "refusal"
        ]
        assert event.payload()["code"] == "surface_not_allowed"
        assert event.payload()["surface"] == client


def test_no_list_allows_any_surface(world: World) -> None:
    _approve(_gate(world, ()), world, "anything", "any-1")


class CrmOnly(RefundOrder):
    def policy(self, args: RefundArgs, state: ResourceState, risk: Risk) -> ApprovalPolicy:
        return ApprovalPolicy(role="refund_approver", surfaces=("jdk8-crm",))


def test_a_tool_policy_lists_its_own_surfaces_over_the_deployments(world: World) -> None:
    """The policy's list wins over the deployment's (which here allows the page)."""
    gate = Gate(
        Catalog([CrmOnly(world.shop, world.provider)]),
        world.store,
        token_key=TOKEN_KEY,
        clock=world.clock,
        directory=world.directory,
        surfaces=("page",),
    )
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    with pytest.raises(SurfaceNotAllowed):
        gate.decide(
            dataclasses.replace(APPROVER, client="page"),
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key="p",
        )
    result = gate.decide(
        dataclasses.replace(APPROVER, client="jdk8-crm"),
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="c",
    )
    assert result.proposal.status is ProposalStatus.CONFIRMED


def test_a_replay_through_a_surface_not_listed_is_refused(world: World) -> None:
    """alice approved through the CRM; the same Idempotency-Key from another client system
    is refused (403) like a first decision from there, not answered with the first one."""
    gate = _gate(world, ("jdk8-crm",))
    proposal = world.propose()
    decision = Decision(DecisionKind.APPROVE, proposal.version)
    crm = dataclasses.replace(APPROVER, client="jdk8-crm")
    first = gate.decide(crm, proposal.proposal_id, decision, idempotency_key="crm-1")
    assert first.confirmation_token is not None
    elsewhere = dataclasses.replace(APPROVER, client="other-app")
    with pytest.raises(SurfaceNotAllowed) as caught:
        gate.decide(elsewhere, proposal.proposal_id, decision, idempotency_key="crm-1")
    assert caught.value.details["surface"] == "other-app"
    again = gate.decide(crm, proposal.proposal_id, decision, idempotency_key="crm-1")
    assert again.duplicate and again.confirmation_token == first.confirmation_token
