"""Real parallelism on PostgreSQL: worker processes racing tokens and decisions.

Every worker is a separate process with its own connection pool, on a schema
of its own; the parent checks the provider's ledger, the decisions and the
audit chain afterwards.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from typing import Any

import pytest

from signoff import Decision, DecisionKind, Gate, ManualClock, Principal, StaticRoleDirectory
from signoff.demo import DemoShop, RefundProvider, demo_catalog, seed_demo_orders
from signoff.exceptions import SignoffError
from signoff.store._postgres import PostgresStore
from tests.conftest import AGENT, APPROVER, APPROVER_2, REFUND, TOKEN_KEY
from tests.pg import fresh_schema

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

PROCESSES = 8
TOKENS = 200
DECISIONS = 30
FIRST_ORDER = 5001
WAIT_S = 600


@dataclass
class Node:
    """One process's view: its own pools on the shared schema."""

    gate: Gate
    store: PostgresStore
    shop: DemoShop
    provider: RefundProvider

    def close(self) -> None:
        self.store.close()
        self.shop.close()


def open_node(url: str) -> Node:
    store = PostgresStore(url, max_size=2)
    shop = DemoShop(url)
    provider = RefundProvider(shop)
    directory = StaticRoleDirectory(
        [("acme", "alice", "refund_approver"), ("acme", "bob", "refund_approver")]
    )
    # Every process starts its ManualClock at the same instant: one shared notion of "now".
    gate = Gate(
        demo_catalog(shop, provider),
        store,
        token_key=TOKEN_KEY,
        clock=ManualClock(),
        directory=directory,
    )
    return Node(gate, store, shop, provider)


@pytest.fixture
def node() -> Iterator[Node]:
    with fresh_schema("race") as url:
        PostgresStore(url).migrate()
        n = open_node(url)
        orders = [("acme", f"ord_{FIRST_ORDER + i}", "u_42", "CNY", 19900) for i in range(TOKENS)]
        with n.shop.db.write() as conn:
            conn.executemany(
                "INSERT INTO orders (tenant, order_id, owner, currency, payable) "
                "VALUES (?,?,?,?,?)",
                orders,
            )
        try:
            yield n
        finally:
            n.close()


def url_of(node: Node) -> str:
    return node.store.url


def order(i: int) -> str:
    return f"ord_{FIRST_ORDER + i}"


def _spawn(target: Any, args: list[tuple[Any, ...]]) -> list[Any]:
    """Run ``target(*a, barrier, results)`` in one spawned process per ``a``; gather results.

    A worker that dies fails the test at once instead of leaving the parent waiting.
    """
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(args))
    results: Queue[Any] = context.Queue()
    processes = [context.Process(target=target, args=(*a, barrier, results)) for a in args]
    for process in processes:
        process.start()
    gathered: list[Any] = []
    deadline = time.monotonic() + WAIT_S
    try:
        while len(gathered) < len(processes):
            try:
                gathered.append(results.get(timeout=1))
            except queue.Empty:
                dead = [p.exitcode for p in processes if p.exitcode not in (None, 0)]
                assert not dead, f"worker process died with exit codes {dead}"
                assert time.monotonic() < deadline, "workers did not finish in time"
    finally:
        for process in processes:
            process.join(timeout=60)
            if process.is_alive():
                process.terminate()
    assert [p.exitcode for p in processes] == [0] * len(processes)
    return gathered


# every process tries every token ---------------------------------------------------------


def _execute_every_token(
    url: str, jobs: list[tuple[str, str]], barrier: Barrier, results: Queue[Any]
) -> None:
    node = open_node(url)
    outcomes: Counter[str] = Counter()
    try:
        barrier.wait()
        for proposal_id, token in jobs:
            try:
                outcomes[node.gate.execute(AGENT, proposal_id, token).execution.status.value] += 1
            except SignoffError as exc:
                outcomes[exc.code] += 1
    finally:
        node.close()
    results.put(outcomes)


def test_eight_processes_race_every_one_of_200_tokens(node: Node) -> None:
    """8 processes × 200 tokens, each tries all: 200 refunds, every other try already_consumed."""
    jobs = []
    for i in range(TOKENS):
        proposal = node.gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order(i)})
        result = node.gate.decide(
            APPROVER,
            proposal.proposal_id,
            Decision(DecisionKind.APPROVE, proposal.version),
            idempotency_key=f"approve-{i}",
        )
        assert result.confirmation_token is not None
        jobs.append((proposal.proposal_id, result.confirmation_token))

    per_process = _spawn(_execute_every_token, [(url_of(node), jobs)] * PROCESSES)

    total: Counter[str] = sum(per_process, Counter())
    assert total == Counter({"succeeded": TOKENS, "already_consumed": TOKENS * (PROCESSES - 1)}), (
        total
    )
    ledger = node.provider.ledger("acme")
    assert len(ledger) == TOKENS
    assert len({entry.request_key for entry in ledger}) == TOKENS
    for i in range(TOKENS):
        found = node.shop.order("acme", order(i))
        assert found is not None and found.refunded == 19900
    report = node.gate.verify_audit()
    # Per token: created, approved, token issued, consumed, started, succeeded; and each
    # loser's already_consumed is evidence (rule 15): one refusal event per loser.
    per_token = 6 + (PROCESSES - 1)
    assert (report.ok, report.events, report.first_bad) == (True, TOKENS * per_token, None)
    with node.store.read() as tx:
        assert tx.audit_heads()["acme"][0] == TOKENS * per_token
        refusals = [e for e in tx.audit_events(tenant="acme") if e.kind == "refusal"]
    assert len(refusals) == TOKENS * (PROCESSES - 1)
    assert {e.payload()["code"] for e in refusals} == {"already_consumed"}
    print(f"\nPostgreSQL token race, {PROCESSES} processes x {TOKENS} tokens: {dict(total)}")


# two workers deciding one proposal --------------------------------------------------------


def _decide_each(
    url: str,
    who: Principal,
    key_prefix: str,
    jobs: list[tuple[str, int, bool]],
    barrier: Barrier,
    results: Queue[Any],
) -> None:
    node = open_node(url)
    outcomes = []
    try:
        for proposal_id, version, same_key in jobs:
            key = f"same-{proposal_id}" if same_key else f"{key_prefix}-{proposal_id}"
            barrier.wait()
            try:
                result = node.gate.decide(
                    who,
                    proposal_id,
                    Decision(DecisionKind.APPROVE, version),
                    idempotency_key=key,
                )
                outcomes.append("duplicate" if result.duplicate else "decided")
            except SignoffError as exc:
                outcomes.append(exc.code)
    finally:
        node.close()
    results.put((key_prefix, outcomes))


def test_two_workers_deciding_one_proposal_record_one_decision(node: Node) -> None:
    """One approver, two workers at once, same key or two keys: exactly one decision."""
    jobs = []
    for i in range(DECISIONS):
        proposal = node.gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order(i)})
        jobs.append((proposal.proposal_id, proposal.version, i % 2 == 0))
    url = url_of(node)

    gathered = dict(
        _spawn(_decide_each, [(url, APPROVER, "first", jobs), (url, APPROVER, "second", jobs)])
    )

    for i, (proposal_id, _, same_key) in enumerate(jobs):
        pair = sorted([gathered["first"][i], gathered["second"][i]])
        assert pair[0] == "decided" or pair[1] == "decided", pair
        losers = {"duplicate", "version_conflict", "invalid_state", "idempotency_key_in_flight"}
        allowed = losers if same_key else losers - {"duplicate"}
        assert pair.count("decided") == 1 and set(pair) - {"decided"} <= allowed, pair
        with node.store.read() as tx:
            stored = tx.proposal("acme", proposal_id)
            events = tx.audit_events(tenant="acme", proposal_id=proposal_id)
            token_id = tx.token_id_for(proposal_id)
        assert stored is not None
        assert len(stored.approvals) == 1
        assert (stored.status.value, stored.version) == ("confirmed", 2)
        assert [e.kind for e in events].count("decision.approved") == 1
        assert [e.kind for e in events].count("token.issued") == 1
        assert token_id is not None
    assert node.gate.verify_audit().ok
    by_keys: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    for i, (_, _, same_key) in enumerate(jobs):
        by_keys[same_key].update([gathered["first"][i], gathered["second"][i]])
    print(f"\none approver, same key: {dict(by_keys[True])}; two keys: {dict(by_keys[False])}")


def _decide_fresh(
    url: str,
    who: Principal,
    key_prefix: str,
    jobs: list[tuple[str, int]],
    barrier: Barrier,
    results: Queue[Any],
) -> None:
    _decide_each(url, who, key_prefix, [(p, v, False) for p, v in jobs], barrier, results)


def test_two_approvers_racing_with_their_own_keys(node: Node) -> None:
    """Two different people with their own keys decide at once: one wins, one is refused."""
    jobs = []
    for i in range(DECISIONS):
        proposal = node.gate.propose(AGENT, "refund_order", {**REFUND, "order_id": order(i)})
        jobs.append((proposal.proposal_id, proposal.version))
    url = url_of(node)

    raced = dict(_spawn(_decide_fresh, [(url, APPROVER, "a", jobs), (url, APPROVER_2, "b", jobs)]))

    for i, (proposal_id, _) in enumerate(jobs):
        pair = sorted([raced["a"][i], raced["b"][i]])
        assert pair.count("decided") == 1, pair
        assert set(pair) - {"decided"} <= {"version_conflict", "invalid_state"}, pair
        with node.store.read() as tx:
            stored = tx.proposal("acme", proposal_id)
        assert stored is not None and len(stored.approvals) == 1
    assert node.gate.verify_audit().ok
    print(f"\ntwo approvers: outcomes {dict(Counter(raced['a'] + raced['b']))}")


# the audit chain under concurrent appends -------------------------------------------------

GLOBEX_AGENT = Principal("u_77", "globex", actor="agent:support-bot")
APPENDS = 25


def _propose_many(url: str, index: int, barrier: Barrier, results: Queue[Any]) -> None:
    node = open_node(url)
    made = 0
    try:
        barrier.wait()
        for n in range(APPENDS):
            if (index + n) % 2:
                node.gate.propose(AGENT, "refund_order", REFUND)
            else:
                node.gate.propose(GLOBEX_AGENT, "refund_order", {**REFUND, "order_id": "ord_2001"})
            made += 1
    finally:
        node.close()
    results.put(made)


def test_concurrent_appends_form_one_chain_per_tenant(node: Node) -> None:
    """8 processes append to two brand-new tenant chains at once: no fork, no gap."""
    seed_demo_orders(node.shop)
    made = _spawn(_propose_many, [(url_of(node), i) for i in range(PROCESSES)])
    assert sum(made) == PROCESSES * APPENDS
    report = node.gate.verify_audit()
    assert (report.ok, report.events, report.tenants) == (True, PROCESSES * APPENDS, 2)
    with node.store.read() as tx:
        heads = tx.audit_heads()
        events = tx.audit_events()
    assert heads["acme"][0] + heads["globex"][0] == PROCESSES * APPENDS
    for tenant in ("acme", "globex"):
        seqs = [e.seq for e in events if e.tenant == tenant]
        assert seqs == list(range(1, heads[tenant][0] + 1))
