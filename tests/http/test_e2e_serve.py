"""A real `signoff serve --demo` process (two workers) on a free port, driven over HTTP."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from signoff import exceptions
from signoff.client import SignoffClient
from signoff.demo import DemoShop, RefundProvider
from signoff.http import Settings, mint_dev_token
from tests.conftest import REFUND
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow


@dataclass
class Server:
    base_url: str
    db: Path


def signoff(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "signoff", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    db = tmp_path_factory.mktemp("serve") / "signoff.db"
    with serving(["--demo", "--db", str(db), "--workers", "2"]) as base_url:
        yield Server(base_url, db)


def shop_ledger(db: Path) -> list[tuple[str, str, int]]:
    shop = DemoShop(f"{db}.shop.sqlite")
    try:
        return [(e.tenant, e.order_id, e.amount_minor) for e in RefundProvider(shop).ledger()]
    finally:
        shop.close()


def test_demo_flow_over_a_real_server(server: Server) -> None:
    """Seeded data, CLI dev tokens, one refund in the demo ledger, token then refused."""
    agent_jwt = signoff(
        "dev-token", "--demo", "--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"
    )
    approver_jwt = signoff(
        "dev-token", "--demo", "--sub", "alice", "--tenant", "acme", "--role", "refund_approver"
    )
    with SignoffClient(server.base_url, agent_jwt) as agent:
        approver = agent.as_caller(approver_jwt)
        assert agent.demo_order("ord_1100").payable_minor == 19900
        proposal = agent.propose("refund_order", REFUND)
        approver.approve(proposal, idempotency_key="walkthrough-approve")
        assert approver.approve(proposal, idempotency_key="walkthrough-approve").duplicate
        token = agent.confirmation_token(proposal.proposal_id)
        outcome = agent.execute(proposal.proposal_id, token)
        assert outcome.receipt is not None
        assert outcome.receipt.status == "succeeded"
        with pytest.raises(exceptions.AlreadyConsumed):
            agent.execute(proposal.proposal_id, token)
        ledger = agent.demo_ledger()
    assert [(e.order_id, e.amount_minor) for e in ledger] == [("ord_1001", 19900)]
    assert shop_ledger(server.db) == [("acme", "ord_1001", 19900)]


def test_32_concurrent_executions_across_workers_refund_once(server: Server) -> None:
    """Two worker processes, 32 racing requests with one token: one refund."""
    agent_jwt = signoff(
        "dev-token", "--demo", "--sub", "u_42", "--tenant", "acme", "--act", "agent:support-bot"
    )
    approver_jwt = signoff(
        "dev-token", "--demo", "--sub", "bob", "--tenant", "acme", "--role", "refund_approver"
    )
    with SignoffClient(server.base_url, agent_jwt) as agent:
        proposal = agent.propose("refund_order", {**REFUND, "order_id": "ord_1050"})
        agent.as_caller(approver_jwt).approve(proposal)
        token = agent.confirmation_token(proposal.proposal_id)
    body = {"proposal_id": proposal.proposal_id, "confirmation_token": token}

    def post(n: int) -> int:
        headers = {"Authorization": f"Bearer {agent_jwt}", "Idempotency-Key": f"race-{n}"}
        return httpx.post(
            f"{server.base_url}/v1/executions", json=body, headers=headers, timeout=60
        ).status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        statuses = sorted(pool.map(post, range(32)))
    assert statuses == [200] + [409] * 31
    refunds = [row for row in shop_ledger(server.db) if row[1] == "ord_1050"]
    assert refunds == [("acme", "ord_1050", 19900)]


def test_metrics_add_up_every_workers_requests(server: Server) -> None:
    """Two workers, one count: any worker's /metrics reports all the requests made."""
    import re

    admin = mint_dev_token(
        Settings(demo=True),
        subject="olga",
        tenant="acme",
        roles=["signoff_admin"],
        now=datetime.now(UTC),
    )

    def whoami_count() -> float:
        headers = {"Authorization": f"Bearer {admin}"}
        text = httpx.get(f"{server.base_url}/metrics", headers=headers, timeout=30).text
        found = re.search(
            r'^signoff_http_requests_total\{method="GET",route="/v1/whoami",status="401"\} (\S+)$',
            text,
            flags=re.MULTILINE,
        )
        return 0.0 if found is None else float(found.group(1))

    before = whoami_count()
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for _ in range(40):
            client.get("/v1/whoami", headers={"Connection": "close"})
    assert {whoami_count() for _ in range(6)} == {before + 40}
