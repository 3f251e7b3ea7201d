"""The real filesystem MCP server behind the gateway: the file on disk is the effect checked."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signoff import (
    ExecutionStatus,
    NotFoundAtProvider,
    Preview,
    Principal,
    ResourceState,
    SideEffect,
    StrictArgs,
    Succeeded,
    WriteTool,
)
from signoff.agents import AgentTools
from signoff.exceptions import (
    AlreadyConsumed,
    ArgsMismatch,
    InvalidArguments,
    NotFound,
    StateChanged,
    UnknownTool,
)
from signoff.gateway import READ_EVENT
from signoff.http import Settings, create_app
from signoff.web import include_ui
from tests.gateway.conftest import AGENT, ERIN, FsWorld
from tests.web.conftest import BASE, hidden_fields, jwt_for

pytestmark = pytest.mark.slow


@pytest.fixture
def page(fs: FsWorld) -> Iterator[TestClient]:
    """The confirmation pages over the gateway's gate, signed in as the approver."""
    app = create_app(Settings(demo=True), gate=fs.gate, extras=[include_ui])
    with TestClient(app, base_url=BASE) as client:
        form = hidden_fields(client.get("/ui/sign-in").text)
        signed = client.post(
            "/ui/sign-in", data={**form, "token": jwt_for(ERIN)}, follow_redirects=False
        )
        assert signed.status_code == 303, signed.text
        yield client


def test_write_is_a_proposal_approved_on_the_page_and_written_once(
    fs: FsWorld, page: TestClient
) -> None:
    """write_file becomes a proposal (no file); the page approves it; execute writes it once."""
    target = fs.directory / "note.txt"
    proposal = fs.write()
    assert not target.exists()
    assert proposal.tool == "fs_write_file"
    assert proposal.tool_version.startswith("mcp:fs/write_file@sha256:")
    assert proposal.preview.title == f"Write {target}"
    assert proposal.preview.field("content").label == "New content"  # type: ignore[union-attr]
    assert fs.upstream.calls("write_file") == 0

    shown = page.get(f"/ui/proposals/{proposal.proposal_id}")
    assert shown.status_code == 200 and "hello, approved world" in shown.text
    decided = page.post(
        f"/ui/proposals/{proposal.proposal_id}/decision",
        data=hidden_fields(shown.text, "approve"),
        follow_redirects=False,
    )
    assert decided.status_code == 303, decided.text
    assert not target.exists()

    token = fs.gate.confirmation_token(AGENT, proposal.proposal_id)
    result = fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.SUCCEEDED
    assert target.read_text() == "hello, approved world\n"
    assert fs.upstream.calls("write_file") == 1
    assert result.receipt is not None
    reference = result.receipt.provider_reference
    assert reference is not None and reference.startswith("sha256:")
    answer = fs.gateway.result(reference)
    assert answer is not None and "Successfully wrote" in answer.content[0].text  # type: ignore[union-attr]


def test_replay_and_a_racing_second_execute_change_nothing(fs: FsWorld) -> None:
    """The token is consumed once: a replay and a racing execute never call the upstream again."""
    target = fs.directory / "race.txt"
    proposal = fs.write("race.txt", "first\n")
    token = fs.approve(proposal)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def execute() -> None:
        barrier.wait()
        try:
            fs.gate.execute(AGENT, proposal.proposal_id, token)
            outcomes.append("ran")
        except AlreadyConsumed:
            outcomes.append("refused")

    threads = [threading.Thread(target=execute) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["ran", "refused"]
    target.write_text("changed by a person afterwards\n")
    with pytest.raises(AlreadyConsumed):
        fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert target.read_text() == "changed by a person afterwards\n"
    assert fs.upstream.calls("write_file") == 1


def test_a_read_passes_through_and_is_audited_without_its_values(fs: FsWorld) -> None:
    """read_text_file is a read in the policy: answered at once, one audit event of digests."""
    (fs.directory / "plain.txt").write_text("the file's own words")
    path = str(fs.directory / "plain.txt")
    answer = fs.gateway.call_read(
        AGENT, "fs_read_text_file", {"path": path, "head": None, "tail": None}
    )
    assert not answer.is_error
    assert answer.structured_content == {"content": "the file's own words"}
    events = [e for e in _events(fs) if e.kind == READ_EVENT]
    assert len(events) == 1
    event, data = events[0], events[0].payload()
    assert event.actor == AGENT.label() and data["tool"] == "read_text_file"
    assert len(data["args_digest"]) == 64 and data["result_digest"].startswith("sha256:")
    assert "the file's own words" not in event.data and path not in event.data
    assert fs.gate.verify_audit().ok
    with pytest.raises(UnknownTool):
        fs.gate.propose(AGENT, "fs_read_text_file", {"path": path, "head": None, "tail": None})


def test_an_unlisted_tool_needs_approval(fs: FsWorld) -> None:
    """create_directory is not in the policy: a write that the upstream's approver confirms."""
    target = fs.directory / "made"
    proposal = fs.propose("fs_create_directory", path=str(target))
    assert proposal.policy["role"] == "fs_approver"
    assert "not listed in the policy" in proposal.risk.reasons
    assert any("fail closed" in fact for fact in proposal.preview.facts)
    assert not target.exists()
    with pytest.raises(NotFound):  # outside its circle: the proposal is not even visible
        fs.approve(proposal, Principal("mallory", "acme", roles=frozenset({"other"})))
    token = fs.approve(proposal)
    fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert target.is_dir()
    assert "fs_read_file" in {t.name for t in fs.gate.catalog}  # unlisted: exposed as a write
    assert "fs_read_text_file" not in {t.name for t in fs.gate.catalog}


def test_risk_rules_over_the_arguments_raise_the_approvals(fs: FsWorld) -> None:
    """A path matching the policy's rule is high risk and needs two distinct approvers."""
    proposal = fs.write("secret.txt", "x")
    assert proposal.risk.level == "high" and proposal.risk.reasons == ("a secret",)
    assert proposal.policy["approvals"] == 2


def test_tampered_arguments_are_refused(fs: FsWorld) -> None:
    """Unknown fields are refused at once; an edited snapshot fails the digest; nothing written."""
    with pytest.raises(InvalidArguments) as unknown:
        fs.propose(path=str(fs.directory / "x.txt"), content="x", mode="0777")
    assert "mode" in str(unknown.value.details["errors"])
    with pytest.raises(InvalidArguments):
        fs.propose(path=str(fs.directory / "x.txt"))  # content is required
    proposal = fs.write("target.txt", "approved text")
    token = fs.approve(proposal)
    with fs.store.transaction() as tx:
        tx.run(
            "UPDATE proposals SET arguments = REPLACE(arguments, 'target.txt', 'other.txt') "
            "WHERE proposal_id = ?",
            (proposal.proposal_id,),
        )
    with pytest.raises(ArgsMismatch):
        fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert list(fs.directory.iterdir()) == []
    assert fs.upstream.calls("write_file") == 0


def test_upstream_killed_mid_call_is_unknown_and_never_written_twice(fs: FsWorld) -> None:
    """The server wrote, then died before answering: unknown; after restart, no second write."""
    target = fs.directory / "once.txt"
    proposal = fs.write("once.txt", "written once\n")
    token = fs.approve(proposal)
    fs.upstream.armed.touch()
    result = fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert result.execution.status is ExecutionStatus.UNKNOWN
    assert target.read_text() == "written once\n"  # the upstream acted; its answer was lost
    fs.upstream.armed.unlink()
    target.write_text("changed by a person since\n")

    # The agent asks again (the execute tool resumes by lookup) and reconcilers run:
    tools = AgentTools(fs.gate)
    again = tools.call(
        AGENT,
        "execute_confirmed_fs_write_file",
        {"proposal_id": proposal.proposal_id, "confirmation_token": token},
    )
    assert again.payload["status"] == "needs_attention", again.payload
    fs.gate.reconcile()
    assert target.read_text() == "changed by a person since\n"
    assert fs.upstream.calls("write_file") == 1
    # A person settles it with what the upstream shows.
    admin = Principal("ops", "acme", roles=frozenset({"signoff_admin"}))
    settled = fs.gate.resolve(
        admin,
        result.execution.execution_id,
        outcome="succeeded",
        provider_reference="checked by ops: once.txt holds the approved text",
        reason="the file is there",
    )
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert fs.upstream.calls("write_file") == 1


def test_a_lookup_tool_named_in_the_policy_reconciles_a_lost_answer(fs_lookup: FsWorld) -> None:
    """With a lookup read in the policy, the lost write is found and settled: succeeded."""
    fs = fs_lookup
    proposal = fs.write("found.txt", "look me up\n")
    token = fs.approve(proposal)
    fs.upstream.armed.touch()
    lost = fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert lost.execution.status is ExecutionStatus.UNKNOWN
    fs.upstream.armed.unlink()
    settled = fs.gate.retry(AGENT, lost.execution.execution_id)
    assert settled.execution.status is ExecutionStatus.SUCCEEDED
    assert settled.execution.provider_reference.startswith("lookup:sha256:")  # type: ignore[union-attr]
    assert (fs.directory / "found.txt").read_text() == "look me up\n"
    assert fs.upstream.calls("write_file") == 1
    assert fs.upstream.calls("read_text_file") == 1


def test_a_changed_schema_announced_by_the_upstream_blocks_the_old_proposal(fs: FsWorld) -> None:
    """notifications/tools/list_changed with a new write_file schema: a new tool version; the
    proposal approved under the old one is refused before its token is consumed."""
    proposal = fs.write("old.txt", "approved under the old schema")
    token = fs.approve(proposal)
    before = fs.gate.catalog.get("fs_write_file").version
    fs.upstream.patch.write_text("write_file")
    os.kill(fs.upstream.pids()[-1], signal.SIGUSR1)
    deadline = time.monotonic() + 30
    while fs.gate.catalog.get("fs_write_file").version == before:
        assert time.monotonic() < deadline, "the catalog never followed the upstream"
        time.sleep(0.05)
    assert "mode" in fs.gate.catalog.schema("fs_write_file")["properties"]
    with pytest.raises(StateChanged):
        fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert fs.gate.proposal(AGENT, proposal.proposal_id).status.value == "confirmed"
    assert not (fs.directory / "old.txt").exists()
    assert fs.upstream.calls("write_file") == 0
    fresh = fs.propose(path=str(fs.directory / "new.txt"), content="new", mode=None)
    assert fresh.tool_version != proposal.tool_version


def test_an_unreachable_upstream_is_retryable_and_a_retry_checks_the_schema(fs: FsWorld) -> None:
    """Nothing left signoff: failed_retryable; a retry after the schema changed sends nothing."""
    proposal = fs.write("later.txt", "x")
    token = fs.approve(proposal)
    fs.upstream.down.touch()
    os.kill(fs.upstream.pids()[-1], signal.SIGKILL)
    first = fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert first.execution.status is ExecutionStatus.FAILED_RETRYABLE
    fs.upstream.down.unlink()
    fs.upstream.patch.write_text("write_file")
    assert fs.gateway.refresh("fs")  # the catalog now has the new version
    with pytest.raises(StateChanged):
        fs.gate.retry(AGENT, first.execution.execution_id)
    assert fs.upstream.calls("write_file") == 0
    assert not (fs.directory / "later.txt").exists()


def test_a_retry_after_the_upstream_is_back_writes_once(fs: FsWorld) -> None:
    """failed_retryable, then the upstream is back: the same request is sent, once."""
    proposal = fs.write("back.txt", "back\n")
    token = fs.approve(proposal)
    fs.upstream.down.touch()
    os.kill(fs.upstream.pids()[-1], signal.SIGKILL)
    first = fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert first.execution.status is ExecutionStatus.FAILED_RETRYABLE
    fs.upstream.down.unlink()
    again = fs.gate.retry(AGENT, first.execution.execution_id)
    assert again.execution.status is ExecutionStatus.SUCCEEDED
    assert (fs.directory / "back.txt").read_text() == "back\n"
    assert fs.upstream.calls("write_file") == 1


def test_a_tool_that_left_the_listing_cannot_execute(fs: FsWorld) -> None:
    """The upstream no longer lists write_file: the catalog drops it; its proposal is refused."""
    proposal = fs.write("gone.txt", "x")
    token = fs.approve(proposal)
    fs.upstream.patch.write_text("-write_file")
    assert fs.gateway.refresh("fs")
    assert "fs_write_file" not in {tool.name for tool in fs.gate.catalog}
    with pytest.raises(UnknownTool):
        fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert fs.upstream.calls("write_file") == 0
    assert not (fs.directory / "gone.txt").exists()


def test_a_silently_changed_schema_is_caught_before_the_call(fs: FsWorld) -> None:
    """No notification: the listing asked before each write finds the change; nothing sent."""
    proposal = fs.write("quiet.txt", "x")
    token = fs.approve(proposal)
    fs.upstream.patch.write_text("write_file")
    with pytest.raises(StateChanged):
        fs.gate.execute(AGENT, proposal.proposal_id, token)
    assert fs.upstream.calls("write_file") == 0
    assert not (fs.directory / "quiet.txt").exists()
    assert fs.gate.catalog.get("fs_write_file").version != proposal.tool_version


def _events(fs: FsWorld) -> list:  # type: ignore[type-arg]
    with fs.store.read() as tx:
        return list(tx.audit_events(tenant="acme"))


def test_the_http_api_proposes_upstream_writes_too(fs: FsWorld, page: TestClient) -> None:
    """POST /v1/proposals names the upstream tool like any other; nothing is written yet."""
    target = fs.directory / "rest.txt"
    response = page.post(
        "/v1/proposals",
        json={"tool": "fs_write_file", "arguments": {"path": str(target), "content": "rest"}},
        headers={"Authorization": f"Bearer {jwt_for(AGENT)}"},
    )
    assert response.status_code == 201, response.text
    assert response.json()["tool_version"].startswith("mcp:fs/write_file@sha256:")
    assert not target.exists()


def test_a_native_tool_of_the_same_name_wins(tmp_path: Path) -> None:
    """A Python tool named fs_write_file shadows the upstream's, which is then not exposed."""
    from tests.gateway.conftest import fs_world

    class Native(WriteTool[NativeArgs]):
        name = "fs_write_file"
        description = "The team's own write."
        side_effect = SideEffect.REVERSIBLE
        approver_role = "owner"

        def preview(self, args: NativeArgs, state: ResourceState) -> Preview:
            return Preview("native", "native", (), "none", "reversible")

        def execute(self, args: NativeArgs, request_key: str, expected: ResourceState) -> Succeeded:
            return Succeeded("native")

        def lookup(self, request_key: str) -> NotFoundAtProvider:
            return NotFoundAtProvider()

    for fs in fs_world(tmp_path):
        catalog = fs.gateway.catalog()
        catalog.register(Native())
        assert isinstance(catalog.get("fs_write_file"), Native)
        assert "fs_write_file" not in {t.name for t in catalog.upstream_tools()}
        fs.upstream.patch.write_text("write_file")
        assert fs.gateway.refresh("fs")  # a new listing: still the native tool
        assert isinstance(catalog.get("fs_write_file"), Native)
        assert any("native tool" in s.reason for s in fs.gateway.skipped)
        assert set(catalog.schema("fs_write_file")["properties"]) == {"path"}


class NativeArgs(StrictArgs):
    path: str
