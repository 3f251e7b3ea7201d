"""Done when: `signoff serve --demo --upstream fs='… server-filesystem DIR'` lets an MCP client
write a file only after a person approved exactly that write, once, with a receipt.

The test starts the locally installed server binary in place of `npx -y` (no network in tests);
docs/GATEWAY.md shows both forms.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from signoff import Principal
from tests.gateway.conftest import FS_SERVER, require
from tests.http.conftest import token_for
from tests.serving import clean_env, serving

pytestmark = pytest.mark.slow
AGENT = Principal("u_42", "acme", actor="agent:files")
ALICE = Principal("alice", "acme", roles=frozenset({"fs_approver"}))
_HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def _hidden(html: str, form_class: str | None = None) -> dict[str, str]:
    if form_class is not None:
        html = html.split(f'class="{form_class}"', 1)[1].split("</form>", 1)[0]
    return dict(_HIDDEN.findall(html))


def _approve_on_the_page(base_url: str, proposal_id: str, approver: Principal) -> str:
    """Sign in on the page as the approver and press Approve; returns what the page showed."""
    with httpx.Client(base_url=base_url, timeout=30) as browser:
        form = _hidden(browser.get("/ui/sign-in").text)
        signed = browser.post("/ui/sign-in", data={**form, "token": token_for(approver)})
        assert signed.status_code == 303, signed.text
        page = browser.get(f"/ui/proposals/{proposal_id}")
        assert page.status_code == 200, page.text
        decided = browser.post(
            f"/ui/proposals/{proposal_id}/decision",
            data=_hidden(page.text, "approve"),
            follow_redirects=False,
        )
        assert decided.status_code == 303, decided.text
        return page.text


def test_serve_demo_with_an_upstream_writes_only_what_a_person_approved_once(
    tmp_path: Path,
) -> None:
    """The real command: request → no file; approve on the page; execute → the file, once."""
    require(FS_SERVER)
    directory = (tmp_path / "files").resolve()
    directory.mkdir()
    target = directory / "hello.txt"
    upstream = f"fs={shlex.quote(str(FS_SERVER))} {shlex.quote(str(directory))}"
    args = ["--demo", "--db", str(tmp_path / "signoff.db"), "--upstream", upstream]
    with serving(args) as base_url:

        async def agent(step: str, proposal_id: str | None = None) -> dict[str, Any]:
            headers = {"Authorization": f"Bearer {token_for(AGENT)}"}
            async with create_mcp_http_client(headers=headers) as http:
                transport = streamable_http_client(f"{base_url}/mcp", http_client=http)
                async with Client(transport) as client:
                    if step == "request":
                        names = {t.name for t in (await client.list_tools()).tools}
                        assert "request_fs_write_file_confirmation" in names
                        assert "fs_write_file" not in names
                        asked = await client.call_tool(
                            "request_fs_write_file_confirmation",
                            {"path": str(target), "content": "approved, once\n"},
                        )
                        return dict(asked.structured_content or {})
                    status = await client.call_tool(
                        "get_proposal_status", {"proposal_id": proposal_id}
                    )
                    token = (status.structured_content or {})["confirmation_token"]
                    execute = {"proposal_id": proposal_id, "confirmation_token": token}
                    first = await client.call_tool("execute_confirmed_fs_write_file", execute)
                    target.write_text("changed after the write\n")
                    again = await client.call_tool("execute_confirmed_fs_write_file", execute)
                    return {"first": first.structured_content, "again": again.structured_content}

        proposal = anyio.run(agent, "request")
        assert proposal["status"] == "awaiting_confirmation", proposal
        assert proposal["approval"]["role"] == "fs_approver"
        assert not target.exists()
        shown = _approve_on_the_page(base_url, proposal["proposal_id"], ALICE)
        assert "approved, once" in shown and str(target) in shown
        assert not target.exists()
        done = anyio.run(agent, "execute", proposal["proposal_id"])

    first, again = done["first"], done["again"]
    assert first["status"] == "succeeded", first
    receipt = first["receipt"]
    assert receipt["approvers"] == ["alice"] and receipt["operation"] == "fs_write_file"
    assert receipt["provider_reference"].startswith("sha256:")
    assert again["kind"] == "refusal" and again["code"] == "already_consumed", again
    assert target.read_text() == "changed after the write\n"  # the replay wrote nothing


def test_signoff_mcp_over_stdio_fronts_the_upstream(tmp_path: Path) -> None:
    """`signoff mcp --demo --upstream …`: the same tools for a stdio client, reads audited."""
    require(FS_SERVER)
    directory = (tmp_path / "files").resolve()
    directory.mkdir()
    (directory / "a.txt").write_text("from the upstream")
    policy = tmp_path / "policy.toml"
    policy.write_text('[upstreams.fs.tools.read_text_file]\nkind = "read"\n')
    upstream = f"fs={shlex.quote(str(FS_SERVER))} {shlex.quote(str(directory))}"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "signoff", "mcp", "--demo", "--db", str(tmp_path / "signoff.db"),
              "--upstream", upstream, "--policy", str(policy)],
        env=clean_env(),
    )  # fmt: skip

    async def body() -> tuple[set[str], Any]:
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            read = await client.call_tool(
                "fs_read_text_file", {"path": str(directory / "a.txt"), "head": None, "tail": None}
            )
            return names, read.structured_content

    names, read = anyio.run(body)
    assert "fs_read_text_file" in names and "request_fs_write_file_confirmation" in names
    assert "request_refund_order_confirmation" in names  # the demo's own tools stay
    assert read == {"content": "from the upstream"}


def test_a_wrong_upstream_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """`signoff serve --upstream` with a bad value or an unreachable server does not start."""
    import subprocess

    for value, code in (
        ("Fs=x", "invalid_upstream"),
        (f"fs={tmp_path}/nothing", "upstream_unavailable"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "signoff", "serve", "--demo", "--db", str(tmp_path / "s.db"),
             "--upstream", value],
            capture_output=True, text=True, env=clean_env(), timeout=120,
        )  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert f"error [{code}]:" in done.stderr
        assert "Traceback" not in done.stderr
