"""`signoff serve` settles stuck executions in the background."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from fastapi.testclient import TestClient

from signoff.demo import FaultMode
from signoff.http import Settings, create_app
from tests.conftest import AGENT, APPROVER, REFUND
from tests.http.conftest import auth


def test_a_lost_answer_is_settled_by_the_worker_reconciler(tmp_path: Path) -> None:
    """A refund whose answer was lost ends succeeded without any client asking again."""
    settings = Settings(
        demo=True,
        database_url=str(tmp_path / "signoff.db"),
        reconcile_interval_seconds=1,
        reconcile_older_than_seconds=0,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        state = app.state.signoff
        proposal = client.post(
            "/v1/proposals", json={"tool": "refund_order", "arguments": REFUND}, headers=auth(AGENT)
        ).json()
        client.post(
            f"/v1/proposals/{proposal['proposal_id']}/decision",
            json={"decision": "approve", "expected_version": proposal["version"]},
            headers=auth(APPROVER, uuid.uuid4().hex),
        ).raise_for_status()
        token = client.get(
            f"/v1/proposals/{proposal['proposal_id']}/confirmation-token", headers=auth(AGENT)
        ).json()["confirmation_token"]
        state.demo.provider.fail_next(FaultMode.TIMEOUT_AFTER_SUCCESS)
        first = client.post(
            "/v1/executions",
            json={
                "proposal_id": proposal["proposal_id"],
                "confirmation_token": token,
            },
            headers=auth(AGENT, uuid.uuid4().hex),
        )
        assert first.status_code == 202
        execution_id = first.json()["execution"]["execution_id"]
        status = "unknown"
        for _ in range(300):
            status = client.get(f"/v1/executions/{execution_id}", headers=auth(AGENT)).json()[
                "execution"
            ]["status"]
            if status != "unknown":
                break
            time.sleep(0.05)
        assert status == "succeeded"
        assert [e.order_id for e in state.demo.provider.ledger()] == ["ord_1001"]


def test_a_quiet_log_is_checkpointed_by_the_worker(tmp_path: Path) -> None:
    """Proposals under the event limit, then no write: serve signs their checkpoint anyway."""
    settings = Settings(
        demo=True,
        database_url=str(tmp_path / "signoff.db"),
        reconcile_interval_seconds=0,
        checkpoint_events=64,
        checkpoint_seconds=1,
    )
    app = create_app(settings)
    with TestClient(app) as client:
        store = app.state.signoff.gate.store
        for amount in (100, 200, 300):
            client.post(
                "/v1/proposals",
                json={"tool": "refund_order", "arguments": {**REFUND, "amount_minor": amount}},
                headers=auth(AGENT),
            ).raise_for_status()
        with store.read() as tx:
            head = tx.audit_head_seq("acme")
        assert head >= 3
        covered = 0
        for _ in range(100):  # the pass runs every second; give it ten
            with store.read() as tx:
                covered = max((c.size for c in tx.checkpoints("acme")), default=0)
            if covered == head:
                break
            time.sleep(0.1)
        assert covered == head


def test_an_undecided_proposal_is_expired_by_the_worker_follow_up(tmp_path: Path) -> None:
    """Past a one-second deadline nobody acted on, serve's follow-up pass marks it expired and
    audits it once; with the pass off (reconciler on) nothing ends it."""
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults.expiry]\nlow = "1s"\nmedium = "1s"\nhigh = "1s"\n')
    for interval, expected in ((1, ["proposal.expired"]), (0, [])):
        settings = Settings(
            demo=True,
            database_url=str(tmp_path / f"signoff-{interval}.db"),
            policy_file=policy,
            reconcile_interval_seconds=1,
            followup_interval_seconds=interval,
        )
        app = create_app(settings)
        with TestClient(app) as client:
            store = app.state.signoff.gate.store
            proposal = client.post(
                "/v1/proposals",
                json={"tool": "refund_order", "arguments": REFUND},
                headers=auth(AGENT),
            ).json()
            kinds: list[str] = []
            for _ in range(200 if interval else 60):
                time.sleep(0.05)
                with store.read() as tx:
                    events = tx.audit_events_after("acme", 0, 100)
                kinds = [
                    e.kind
                    for e in events
                    if e.proposal_id == proposal["proposal_id"] and e.kind == "proposal.expired"
                ]
                if kinds:
                    break
            assert kinds == expected
