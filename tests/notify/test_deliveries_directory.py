"""Issue 23: /v1/deliveries asks the role directory like /v1/roles, and a replay is audited.

An admin whose `signoff_admin` was withdrawn (or, in `grants` mode, never granted) still
listed and replayed deliveries, and the replay left no trace. Both stores, both modes;
the deliveries table and the audit chain are what is checked.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from signoff import ManualClock, Principal
from tests.http.conftest import assert_problem
from tests.notify.conftest import Receiver, notifier_for, webhook
from tests.redteam import STORES, Served, serve

OLGA = Principal("olga", "acme", frozenset({"signoff_admin"}))
ROOT = Principal("root", "acme", frozenset({"signoff_admin"}))  # claims it; never granted


@pytest.fixture(params=[(s, m) for s in STORES for m in ("grants", "revocations")], ids="-".join)
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Served]:
    store, mode = request.param
    with serve(store, tmp_path, role_directory=mode) as server:
        if mode == "grants":
            server.directory.grant("acme", "olga", "signoff_admin", by="ops")
        yield server


def _dead_letter(served: Served, receiver: Receiver) -> dict[str, Any]:
    world = SimpleNamespace(store=served.state.gate.store)
    notifier = notifier_for(
        world,  # type: ignore[arg-type]
        webhook(receiver, max_attempts=1),
        clock=ManualClock(datetime.now(UTC)),
    )
    notifier.run_once()
    receiver.status = 500
    served.proposed()
    notifier.run_once()
    listed = served.client.get("/v1/deliveries?status=dead", headers=served.auth(OLGA))
    assert listed.status_code == 200, listed.text
    (dead,) = listed.json()["deliveries"]
    return dead  # type: ignore[no-any-return]


def _statuses(served: Served) -> list[tuple[str, int]]:
    with served.state.gate.store.read() as tx:
        rows = tx.run("SELECT status, attempts FROM deliveries ORDER BY seq", ()).fetchall()
    return [(str(status), int(attempts)) for status, attempts in rows]


def test_a_revoked_admin_neither_lists_nor_replays_and_a_replay_is_audited(
    served: Served, receiver: Receiver
) -> None:
    dead = _dead_letter(served, receiver)
    path = f"/v1/deliveries/{dead['destination']}/{dead['audit_seq']}/replay"
    served.directory.revoke("acme", "olga", "signoff_admin", by="ops")
    for refused in (
        served.client.get("/v1/deliveries", headers=served.auth(OLGA)),
        served.client.post(path, headers=served.auth(OLGA)),
    ):
        body = assert_problem(refused, 403, "not_entitled")
        assert "revoked" in body["detail"]
    assert _statuses(served) == [("dead", 1)]
    assert served.audit("delivery.replayed") == []

    served.directory.grant("acme", "olga", "signoff_admin", by="ops")
    assert served.client.post(path, headers=served.auth(OLGA)).status_code == 200
    assert _statuses(served) == [("pending", 0)]
    [replayed] = served.audit("delivery.replayed")
    assert replayed.actor == "olga"
    data = replayed.payload()
    assert (data["destination"], data["audit_seq"], data["attempts"]) == (
        dead["destination"],
        dead["audit_seq"],
        1,
    )


def test_an_admin_the_directory_never_granted_is_told_so(served: Served) -> None:
    """grants mode: `root`'s token claims the role, the directory never granted it; in
    revocations mode the same claim holds, since nobody revoked it."""
    if served.directory.mode != "grants":
        assert served.client.get("/v1/deliveries", headers=served.auth(ROOT)).status_code == 200
        return
    body = assert_problem(
        served.client.get("/v1/deliveries", headers=served.auth(ROOT)), 403, "not_entitled"
    )
    assert "does not grant" in body["detail"] and "revoked" not in body["detail"]
    roles = assert_problem(
        served.client.get("/v1/roles", headers=served.auth(ROOT)), 403, "forbidden"
    )
    assert "does not grant" in roles["detail"] and "revoked" not in roles["detail"]
