"""A real `signoff serve --policy FILE`: the file is in force, SIGHUP reloads it (recorded and
audited), and a reload with problems keeps the policy in force."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from signoff import Principal
from signoff.store import SQLiteStore
from tests.conftest import AGENT, REFUND
from tests.http.conftest import auth
from tests.serving import clean_env, free_port, stop, wait_ready

WAIT_S = 60


def _approvals(base: str, order: str) -> int:
    """Propose; the approvals its policy asks, as its proposal.created event records them."""
    body = {"tool": "refund_order", "arguments": {**REFUND, "order_id": order}}
    response = httpx.post(f"{base}/v1/proposals", json=body, headers=auth(AGENT), timeout=10)
    assert response.status_code == 201, response.text
    view = response.json()
    assert len(view["policy_version"]) == 64
    auditor = Principal("audrey", "acme", roles=frozenset({"auditor"}))
    events = httpx.get(
        f"{base}/v1/audit",
        params={"proposal_id": view["proposal_id"]},
        headers=auth(auditor),
        timeout=10,
    ).json()["events"]
    created = next(e for e in events if e["kind"] == "proposal.created")
    assert created["data"]["policy"]["version"] == view["policy_version"]
    return int(created["data"]["policy"]["approvals"])


def _wait_for(base: str, approvals: int, orders: list[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if _approvals(base, orders.pop()) == approvals:
            return
        time.sleep(0.2)
    raise AssertionError(f"the server never applied approvals = {approvals}")


def test_sighup_reloads_the_policy_file(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[tools.refund_order]\napprovals = 1\n")
    db = tmp_path / "signoff.db"
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable, "-m", "signoff", "serve", "--demo", "--db", str(db),
            "--policy", str(policy), "--port", str(port), "--log-level", "info",
        ],
        env=clean_env(),
        stdout=log,
        stderr=log,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    orders = [f"ord_{n}" for n in range(1001, 1100)]
    try:
        wait_ready(base, process)
        assert _approvals(base, orders.pop()) == 1
        policy.write_text("[tools.refund_order]\napprovals = 2\n")
        process.send_signal(signal.SIGHUP)
        _wait_for(base, 2, orders)
        policy.write_text("[tools.refund_order]\napprovals = 0\n")
        process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + WAIT_S
        while b"policy reload refused" not in (tmp_path / "serve.log").read_bytes():
            assert time.monotonic() < deadline, "the refused reload was never logged"
            time.sleep(0.2)
        assert process.poll() is None, "a bad reload must not stop the server"
        assert _approvals(base, orders.pop()) == 2
    finally:
        stop(process)
        log.close()
    store = SQLiteStore(db)
    try:
        with store.read() as tx:
            applied = [e for e in tx.audit_events(tenant="acme") if e.kind == "policy.applied"]
            versions = tx.policy_versions()
    finally:
        store.close()
    assert applied and applied[-1].actor == "signoff serve (SIGHUP)"
    assert [v.applied_by for v in versions] == ["signoff serve (SIGHUP)", "signoff serve"]
