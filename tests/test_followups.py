"""Reminders, escalation and expiry notices on the injected clock, on both stores."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from signoff import (
    Decision,
    DecisionKind,
    Gate,
    ManualClock,
    Principal,
    ProposalStatus,
    StaticRoleDirectory,
)
from signoff.exceptions import NotFound, SeparationOfDuties, SignoffError
from signoff.notify import Notifier
from signoff.policy import PolicySource
from tests.conftest import AGENT, APPROVER, REFUND, TOKEN_KEY
from tests.notify.conftest import PUBLIC_URL, Receiver, webhook
from tests.test_store_contract import STORES, Backend, backend_for

POLICY = """
[tools.refund_order.expiry]
low = "2h"
medium = "2h"
high = "2h"

[tools.refund_order.escalation]
remind_after = ["10m"]
escalate_after = "30m"
targets = ["role:finance_lead", "person:erin", "person:u_42"]
"""
FRED = Principal("fred", "acme", roles=frozenset({"finance_lead"}))
ERIN = Principal("erin", "acme")
REQUESTER = Principal("u_42", "acme")
"""The requester as a person: named among the targets, and still never a decider."""
CAROL = Principal("carol", "acme", roles=frozenset({"support"}))


@pytest.fixture(params=STORES)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        b.directory = StaticRoleDirectory(
            [
                ("acme", "alice", "refund_approver"),
                ("acme", "fred", "finance_lead"),
                ("acme", "carol", "support"),
                ("acme", "olga", "signoff_admin"),
            ]
        )
        yield b


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """The webhook stand-in on a loopback port: records what it was sent."""
    r = Receiver()
    r.start()
    yield r
    r.stop()


def policy_gate(backend: Backend, tmp_path: Path) -> Gate:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    plain = backend.gate()
    return Gate(
        plain.catalog,
        backend.store,
        token_key=TOKEN_KEY,
        clock=backend.clock,
        directory=backend.directory,
        policy=PolicySource(plain.catalog, path),
    )


def kinds(backend: Backend, kind: str) -> list[str]:
    with backend.store.read() as tx:
        events = tx.audit_events_after("acme", 0, 1000)
    return [str(e.proposal_id) for e in events if e.kind == kind]


def approve(gate: Gate, by: Principal, proposal_id: str, key: str) -> ProposalStatus:
    version = gate.proposal(APPROVER, proposal_id).version
    decision = Decision(DecisionKind.APPROVE, version)
    return gate.decide(by, proposal_id, decision, idempotency_key=key).proposal.status


def test_a_reminder_at_ten_minutes_arrives_once_and_the_deadline_stays(
    backend: Backend, tmp_path: Path, receiver: Receiver
) -> None:
    """Nothing at 9m59s; at 10m one reminder, once, delivered once; expires_at unchanged."""
    gate = policy_gate(backend, tmp_path)
    notifier = Notifier(
        backend.store,
        [webhook(receiver)],
        public_url=PUBLIC_URL,
        clock=ManualClock(datetime.now(UTC)),
    )
    notifier.run_once()  # the destination starts hearing from here
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    deadline = proposal.expires_at
    backend.clock.advance(timedelta(minutes=10) - timedelta(seconds=1))
    assert gate.follow_up().reminded == []
    backend.clock.advance(timedelta(seconds=1))
    assert gate.follow_up().reminded == [proposal.proposal_id]
    assert gate.follow_up().reminded == []
    notifier.run_once()
    notifier.run_once()
    assert kinds(backend, "proposal.reminded") == [proposal.proposal_id]
    reminders = [r for r in receiver.requests if b'"proposal.reminded"' in r.body]
    assert len(reminders) == 1 and proposal.proposal_id.encode() in reminders[0].body
    assert gate.proposal(APPROVER, proposal.proposal_id).expires_at == deadline


def test_escalation_at_thirty_minutes_lets_the_targets_decide_and_not_before(
    backend: Backend, tmp_path: Path
) -> None:
    """Before 30m the finance lead cannot even see it; after, they approve it; the requester,
    named as a target, is still refused (separation of duties)."""
    gate = policy_gate(backend, tmp_path)
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    pid = proposal.proposal_id
    backend.clock.advance(timedelta(minutes=29))
    gate.follow_up()
    with pytest.raises(NotFound):
        approve(gate, FRED, pid, "f1")
    with pytest.raises(NotFound):
        gate.proposal(ERIN, pid)
    backend.clock.advance(timedelta(minutes=1))
    assert gate.follow_up().escalated == [pid]
    assert gate.follow_up().escalated == []
    assert kinds(backend, "proposal.escalated") == [pid]
    with pytest.raises(NotFound):
        gate.proposal(CAROL, pid)  # not a target: still outside the circle
    with pytest.raises(SeparationOfDuties):
        approve(gate, REQUESTER, pid, "u1")
    assert gate.proposal(ERIN, pid).status is ProposalStatus.AWAITING_CONFIRMATION
    assert approve(gate, FRED, pid, "f2") is ProposalStatus.CONFIRMED
    with backend.store.read() as tx:
        (decided,) = [
            e for e in tx.audit_events_after("acme", 0, 1000) if e.kind == "decision.approved"
        ]
    assert decided.payload()["assigned_as"] == "role:finance_lead"
    assert gate.proposal(APPROVER, pid).expires_at == proposal.expires_at


def test_two_workers_racing_take_each_step_once(backend: Backend, tmp_path: Path) -> None:
    """Two gates on one store, passing at the same moment: one reminder, one escalation."""
    gates = [policy_gate(backend, tmp_path) for _ in range(2)]
    proposals = [
        gates[0].propose(AGENT, "refund_order", {**REFUND, "order_id": o})
        for o in ("ord_1001", "ord_1002", "ord_1003")
    ]
    backend.clock.advance(timedelta(minutes=31))
    start = threading.Barrier(len(gates))
    passes = []

    def work(gate: Gate) -> None:
        start.wait()
        passes.append(gate.follow_up())

    threads = [threading.Thread(target=work, args=(g,)) for g in gates]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    ids = sorted(p.proposal_id for p in proposals)
    assert sorted(r for p in passes for r in p.reminded) == ids
    assert sorted(e for p in passes for e in p.escalated) == ids
    assert sorted(kinds(backend, "proposal.reminded")) == ids
    assert sorted(kinds(backend, "proposal.escalated")) == ids


def test_an_undecided_proposal_expires_once_and_is_told_by_webhook(
    backend: Backend, tmp_path: Path, receiver: Receiver
) -> None:
    """At the deadline the loop expires it: one proposal.expired event, one delivery; no
    reminder or escalation is due after the deadline."""
    gate = policy_gate(backend, tmp_path)
    notifier = Notifier(
        backend.store,
        [webhook(receiver, events=["proposal.expired"])],
        public_url=PUBLIC_URL,
        clock=ManualClock(datetime.now(UTC)),
    )
    notifier.run_once()
    proposal = gate.propose(AGENT, "refund_order", REFUND)
    backend.clock.advance(timedelta(hours=2))
    done = gate.follow_up()
    assert (done.expired, done.reminded, done.escalated) == (1, [], [])
    assert gate.follow_up().expired == 0
    notifier.run_once()
    notifier.run_once()
    assert kinds(backend, "proposal.expired") == [proposal.proposal_id]
    assert kinds(backend, "proposal.reminded") == []
    (told,) = receiver.requests
    assert b'"proposal.expired"' in told.body and proposal.proposal_id.encode() in told.body
    assert gate.proposal(AGENT, proposal.proposal_id).status is ProposalStatus.EXPIRED


def test_the_inbox_follows_escalation_and_reassignment(backend: Backend, tmp_path: Path) -> None:
    """The finance lead's inbox shows it from 30m; after a reassignment to erin, alice's
    inbox no longer does, and erin's does."""
    gate = policy_gate(backend, tmp_path)
    pid = gate.propose(AGENT, "refund_order", REFUND).proposal_id

    def inbox(who: Principal) -> list[str]:
        return [p.proposal_id for p in gate.inbox(who)]

    assert (inbox(APPROVER), inbox(FRED), inbox(ERIN)) == ([pid], [], [])
    backend.clock.advance(timedelta(minutes=30))
    gate.follow_up()
    assert (inbox(APPROVER), inbox(FRED), inbox(ERIN)) == ([pid], [pid], [pid])
    assert inbox(CAROL) == [] and inbox(REQUESTER) == []
    admin = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
    gate.reassign(admin, pid, to=["person:erin"], reason="finance is at the offsite")
    assert (inbox(APPROVER), inbox(FRED), inbox(ERIN)) == ([], [], [pid])


def test_after_a_reassignment_no_escalation_comes_but_reminders_do(
    backend: Backend, tmp_path: Path
) -> None:
    """Reassigned at 5m: the 10m reminder goes, the 30m escalation never widens it again."""
    gate = policy_gate(backend, tmp_path)
    pid = gate.propose(AGENT, "refund_order", REFUND).proposal_id
    backend.clock.advance(timedelta(minutes=5))
    admin = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
    gate.reassign(admin, pid, to=["person:erin"], reason="alice is away")
    backend.clock.advance(timedelta(minutes=5))
    assert gate.follow_up().reminded == [pid]
    backend.clock.advance(timedelta(minutes=20))
    assert gate.follow_up().escalated == []
    with pytest.raises(NotFound):
        gate.proposal(FRED, pid)
    assert kinds(backend, "proposal.reassigned") == [pid]


def test_a_pass_reaches_every_pending_proposal_past_the_first_page(
    backend: Backend, tmp_path: Path
) -> None:
    """Pages of two: older proposals whose steps are done never starve newer ones."""
    gate = policy_gate(backend, tmp_path)
    early = [
        gate.propose(AGENT, "refund_order", {**REFUND, "order_id": o}).proposal_id
        for o in ("ord_1001", "ord_1002", "ord_1003")
    ]
    backend.clock.advance(timedelta(minutes=10))
    assert sorted(gate.follow_up(limit=2).reminded) == sorted(early)
    late = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1004"}).proposal_id
    backend.clock.advance(timedelta(minutes=10))
    assert gate.follow_up(limit=2).reminded == [late]


def _race(gate: Gate, admin: Principal, proposal_id: str, version: int) -> dict[str, str]:
    """Alice's approval and the admin's reassignment, released at one moment."""
    start = threading.Barrier(2)
    outcomes: dict[str, str] = {}

    def run(name: str, call: Callable[[], object]) -> None:
        start.wait()
        try:
            call()
            outcomes[name] = "won"
        except SignoffError as exc:
            outcomes[name] = exc.code

    approval = Decision(DecisionKind.APPROVE, version)
    calls = {
        "decide": lambda: gate.decide(
            APPROVER, proposal_id, approval, idempotency_key=f"a-{proposal_id}"
        ),
        "reassign": lambda: gate.reassign(admin, proposal_id, to=["person:erin"], reason="away"),
    }
    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return outcomes


def test_a_reassignment_racing_a_decision_lets_exactly_one_win(
    backend: Backend, tmp_path: Path
) -> None:
    """Alice approves while an admin reassigns to erin: either the approval stands and the
    reassignment is refused (409), or the reassignment stands and alice is refused — never
    both, on either store."""
    gate = policy_gate(backend, tmp_path)
    admin = Principal("olga", "acme", roles=frozenset({"signoff_admin"}))
    for order in ("ord_1001", "ord_1002", "ord_1003", "ord_1004", "ord_1005"):
        proposal = gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order})
        outcomes = _race(gate, admin, proposal.proposal_id, proposal.version)
        assert list(outcomes.values()).count("won") == 1, outcomes
        final = gate.proposal(admin, proposal.proposal_id)
        if outcomes["decide"] == "won":
            assert final.status is ProposalStatus.CONFIRMED
            assert outcomes["reassign"] == "invalid_state"
        else:
            assert final.status is ProposalStatus.AWAITING_CONFIRMATION and final.approvals == ()
            assert outcomes["decide"] in ("version_conflict", "not_entitled")
