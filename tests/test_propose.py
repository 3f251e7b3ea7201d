"""propose: strict, normalized, previewed, frozen."""

from __future__ import annotations

import json

import pytest

from signoff import Preview, ProposalStatus, Risk, RiskLevel
from signoff.exceptions import (
    ClarificationNeeded,
    Forbidden,
    InvalidArguments,
    InvalidRequest,
    NotFound,
    UnknownTool,
)
from tests.conftest import AGENT, OTHER_TENANT, REFUND, World


def _count(world: World) -> int:
    with world.store.read() as tx:
        return int(tx.run("SELECT COUNT(*) FROM proposals").fetchone()[0])


def test_proposal_snapshot_and_preview(world: World) -> None:
    """The snapshot holds canonical args, digest, state version and a preview with both values."""
    proposal = world.propose()
    assert proposal.status is ProposalStatus.AWAITING_CONFIRMATION
    assert proposal.arguments == REFUND
    assert proposal.state_version == "1"
    assert proposal.resource_id == "order:ord_1001"
    amount = proposal.preview.field("amount_minor")
    assert amount is not None and amount.unit == "1/100 CNY"
    assert (amount.machine_value, amount.display_value) == (19900, "¥199.00")
    assert proposal.expires_at - proposal.created_at == world.gate.catalog.get("refund_order").ttl
    stored = world.gate.proposal(AGENT, proposal.proposal_id)
    assert stored == proposal


def test_missing_currency_asks_instead_of_guessing(world: World) -> None:
    """199 of what? A clarification, never a proposal; nothing is stored."""
    with pytest.raises(ClarificationNeeded) as caught:
        world.propose(currency=None)
    assert caught.value.details["field"] == "currency"
    assert _count(world) == 0


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"amount_minor": True}, InvalidArguments),
        ({"amount_minor": 19900.0}, InvalidArguments),
        ({"unexpected": 1}, InvalidArguments),
        ({"currency": "USD"}, InvalidArguments),
        ({"amount_minor": 19901}, InvalidArguments),
        ({"order_id": "ord_9999"}, NotFound),
        ({"order_id": "ord_2001"}, NotFound),
    ],
    ids=["bool", "float", "unknown-field", "wrong-currency", "over-refund", "missing", "tenant"],
)
def test_bad_requests_change_nothing(world: World, changes: dict[str, object], error: type) -> None:
    """Bad input gets a typed error and stores nothing; other tenants' orders do not exist."""
    with pytest.raises(error):
        world.propose(**changes)
    assert _count(world) == 0


def test_unknown_tool_and_oversized_rationale(world: World) -> None:
    """Unknown tools and huge rationales are refused."""
    with pytest.raises(UnknownTool):
        world.gate.propose(AGENT, "drop_database", {})
    with pytest.raises(InvalidRequest):
        world.gate.propose(AGENT, "refund_order", REFUND, rationale="x" * 5000)


def test_stranger_cannot_request_a_refund_of_someone_elses_order(world: World) -> None:
    """Authorization runs at propose time: only the owner or support staff may ask."""
    from signoff import Principal

    stranger = Principal("u_99", "acme", actor="agent:support-bot")
    with pytest.raises(Forbidden):
        world.gate.propose(stranger, "refund_order", REFUND)
    with pytest.raises(NotFound):
        world.gate.propose(OTHER_TENANT, "refund_order", REFUND)


def test_rationale_is_stored_verbatim_as_untrusted_text(world: World) -> None:
    """The model's rationale is kept as given, never interpreted."""
    proposal = world.gate.propose(
        AGENT, "refund_order", REFUND, rationale="<script>alert(1)</script> approve me"
    )
    assert proposal.rationale == "<script>alert(1)</script> approve me"


def test_risk_and_preview_come_back_typed_and_are_stored_as_before(world: World) -> None:
    """In process: the Risk and Preview the tool returned; in the store: the same JSON as ever."""
    proposal = world.propose()
    assert proposal.risk == Risk(RiskLevel.MEDIUM, ("money leaves the company",))
    assert isinstance(proposal.preview, Preview)
    assert proposal.preview.title == "Refund ¥199.00 on order ord_1001"
    with world.store.read() as tx:
        risk, preview = tx.run(
            "SELECT risk, preview FROM proposals WHERE proposal_id = ?", (proposal.proposal_id,)
        ).fetchone()
    assert json.loads(risk) == {"level": "medium", "reasons": ["money leaves the company"]}
    stored = json.loads(preview)
    assert stored["fields"][0] == {
        "name": "order_id",
        "label": "Order",
        "machine_value": "ord_1001",
        "display_value": "ord_1001",
    }
    assert stored["fields"][1]["unit"] == "1/100 CNY"
    assert world.gate.proposal(AGENT, proposal.proposal_id).preview == proposal.preview


def test_the_request_key_names_no_resource(world: World) -> None:
    """tool:tenant:action_id — the order id (or a recipient) never reaches the provider's key."""
    proposal = world.propose()
    assert proposal.request_key == f"refund_order:acme:{proposal.action_id}"
    assert "ord_1001" not in proposal.request_key
    world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    entry = world.provider.ledger("acme")[0]
    assert (entry.order_id, entry.request_key) == ("ord_1001", proposal.request_key)


def test_existing_executions_keep_their_request_key(world: World) -> None:
    """A proposal stored with the old key form executes and reconciles under that key."""
    proposal = world.propose()
    old_key = f"refund_order:acme:order:ord_1001:{proposal.action_id}"
    with world.store.transaction() as tx:
        tx.run(
            "UPDATE proposals SET request_key = ? WHERE proposal_id = ?",
            (old_key, proposal.proposal_id),
        )
    result = world.gate.execute(AGENT, proposal.proposal_id, world.approve(proposal))
    assert result.execution.request_key == old_key
    assert [e.request_key for e in world.provider.ledger("acme")] == [old_key]
