"""The gateway on PostgreSQL: a read's audit event and a lookup by request key, as on SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import ExecutionStatus, open_store
from signoff.gateway import READ_EVENT
from tests.gateway.conftest import AGENT, LOOKUP, POLICY, fs_world
from tests.pg import fresh_schema

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_reads_are_audited_and_lost_writes_looked_up_on_postgres(tmp_path: Path) -> None:
    """The chain's server-side append takes the read event; the lookup finds the proposal."""
    with fresh_schema("gateway") as url:
        store = open_store(url)
        try:
            for fs in fs_world(tmp_path, POLICY + LOOKUP, store=store):
                (fs.directory / "a.txt").write_text("on postgres")
                path = str(fs.directory / "a.txt")
                fs.gateway.call_read(
                    AGENT, "fs_read_text_file", {"path": path, "head": None, "tail": None}
                )
                proposal = fs.write("b.txt", "looked up\n")
                token = fs.approve(proposal)
                fs.upstream.armed.touch()
                lost = fs.gate.execute(AGENT, proposal.proposal_id, token)
                assert lost.execution.status is ExecutionStatus.UNKNOWN
                fs.upstream.armed.unlink()
                settled = fs.gate.retry(AGENT, lost.execution.execution_id)
                assert settled.execution.status is ExecutionStatus.SUCCEEDED
                assert fs.upstream.calls("write_file") == 1
                with store.read() as tx:
                    events = list(tx.audit_events(tenant="acme"))
                assert [e.kind for e in events].count(READ_EVENT) == 1
                done = [e.payload() for e in events if e.kind == "execution.succeeded"]
                assert done[0]["provider_reference"].startswith("lookup:sha256:")
                assert fs.gate.verify_audit().ok
        finally:
            store.close()
