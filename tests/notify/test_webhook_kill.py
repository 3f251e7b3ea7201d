"""kill -9 of the sender (`signoff notify`, a real process) loses no event."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from signoff import Principal
from signoff.notify import event_id
from tests.conftest import AGENT, World
from tests.notify.conftest import SECRET, Receiver

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))

pytestmark = pytest.mark.slow
KILLS = 5
PROPOSALS = 24


def config(tmp: Path, receiver: Receiver) -> Path:
    path = tmp / "notify.toml"
    path.write_text(
        'public_url = "http://127.0.0.1:8000"\n'
        "interval_seconds = 0.05\n"
        "backoff_seconds = 0.05\n"
        "lease_seconds = 1\n"
        "[[webhooks]]\n"
        'name = "hook"\n'
        f'url = "{receiver.url}"\n'
        "timeout_seconds = 0.5\n"
        'secret_env = "TEST_WEBHOOK_SECRET"\n'
    )
    return path


def sender(world: World, conf: Path, *extra: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "signoff", "notify", "--db", world.store.path]
    env = {**os.environ, "TEST_WEBHOOK_SECRET": SECRET}
    return subprocess.Popen([*command, "--config", str(conf), *extra], env=env)


def wait_for(condition: object, *, what: str, seconds: float = 60) -> None:
    tick = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if condition():  # type: ignore[operator]
            return
        tick.wait(0.02)
    raise AssertionError(f"gave up waiting for {what}")


def test_no_event_is_lost_across_kill_9_of_the_sender(
    world: World, receiver: Receiver, tmp_path: Path
) -> None:
    """SIGKILL while requests are in flight, restart; every event id arrives (same id on resend)."""
    conf = config(tmp_path, receiver)
    assert sender(world, conf, "--once").wait(timeout=60) == 0  # the destination starts here
    receiver.delay = 0.05
    for i in range(PROPOSALS):
        world.gate.propose(AGENT, "add_order_note", {"order_id": "ord_1001", "note": f"n{i}"})
    for _ in range(KILLS):
        seen = receiver.arrived
        process = sender(world, conf)
        try:
            wait_for(lambda s=seen: receiver.arrived > s, what="a request in flight")
        finally:
            process.send_signal(signal.SIGKILL)
            assert process.wait(timeout=30) == -signal.SIGKILL
    receiver.delay = 0.0
    events = world.gate.audit_events(AUDITOR)
    expected = {event_id(e) for e in events if e.kind == "proposal.created"}
    process = sender(world, conf)
    try:
        wait_for(lambda: settled(world) == {"delivered"}, what="every delivery settled")
    finally:
        process.terminate()
        assert process.wait(timeout=30) == 0
    accepted = receiver.accepted_ids()
    assert set(accepted) == expected
    bodies: dict[str, bytes] = {}
    for request in receiver.requests:
        # A resend is the same event: same id, same body (only the timestamp header moves).
        assert bodies.setdefault(request.headers["webhook-id"], request.body) == request.body
    assert len(settled_rows(world)) == PROPOSALS


def settled_rows(world: World) -> list[str]:
    with world.store.read() as tx:
        return [d.status for d in tx.deliveries("acme", limit=1000)]


def settled(world: World) -> set[str]:
    """Statuses of every delivery row, once each event has one (else an empty set)."""
    rows = settled_rows(world)
    return set(rows) if len(rows) == PROPOSALS else set()
