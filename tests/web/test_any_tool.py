"""The page fits any tool: money notes only for money, the tool's own reasons, kept line breaks."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from signoff import Catalog, Gate, Principal, ProposalStatus, SQLiteStore
from signoff.http import create_app
from signoff.testing import FakeProvider
from signoff.web import include_ui
from tests.conftest import AGENT, World
from tests.docs_tool import load_first_tool
from tests.web.conftest import BASE, SETTINGS, Pages, hidden_fields

ERIN = Principal("erin", "acme", roles=frozenset({"email_approver"}))
HELPDESK = Principal("u_7", "acme", actor="agent:helpdesk")
EMAIL = {"to": "kim@partner.example", "subject": "Invoice", "body": "Hello Kim,\n\nattached."}
MONEY_WORDS = ("minor unit", "Amount", "amount", "Wrong amount", "¥", "1/100")


@pytest.fixture
def mail_pages(tmp_path: Path, world: World) -> Iterator[tuple[Pages, FakeProvider]]:
    """The pages over a gate whose only tool is docs/TOOLS.md's send_email."""
    module = load_first_tool(tmp_path)
    outbox = FakeProvider(tmp_path / "outbox.sqlite")
    store = SQLiteStore(tmp_path / "mail.db")
    store.migrate()
    gate = Gate(Catalog([module.SendEmail(outbox)]), store, token_key=b"k" * 32)
    app = create_app(SETTINGS, gate=gate, extras=[include_ui])
    try:
        with TestClient(app, base_url=BASE) as client:
            yield Pages(app, client, world), outbox
    finally:
        store.close()


def displayed(page: str) -> list[str]:
    """The text of each display-value cell, tags removed (line breaks and spaces kept)."""
    cells = re.findall(r'<td class="display">(.*?)</td>', page, flags=re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", cell)) for cell in cells]


def detail(pages: Pages, proposal_id: str) -> str:
    response = pages.client.get(f"/ui/proposals/{proposal_id}")
    assert response.status_code == 200, response.text
    return response.text


def test_an_email_page_has_no_money_and_no_state_panel(
    mail_pages: tuple[Pages, FakeProvider],
) -> None:
    """No unit notes, no "Wrong amount", no business-state table; the body keeps its breaks."""
    pages, _ = mail_pages
    proposal = pages.app.state.signoff.gate.propose(HELPDESK, "send_email", EMAIL)
    pages.sign_in(ERIN)
    page = detail(pages, proposal.proposal_id)
    assert not [word for word in MONEY_WORDS if word in page]
    assert "Business state" not in page and 'id="state-heading"' not in page
    assert displayed(page) == [EMAIL["to"], EMAIL["subject"], EMAIL["body"]]
    assert "Re-type the recipient as shown above" in page
    options = [o.split('"', 1)[0] for o in page.split('<option value="')[2:]]
    assert options == ["wrong_target", "policy", "suspicious", "other"]
    assert ">Approve</button>" in page


def test_an_unset_external_reach_is_not_shown_as_none(
    mail_pages: tuple[Pages, FakeProvider],
) -> None:
    """send_email sets no external_reach: the page says the tool did not state it and that
    its declared side effect is external — never "External reach: None"."""
    pages, _ = mail_pages
    proposal = pages.app.state.signoff.gate.propose(HELPDESK, "send_email", EMAIL)
    pages.sign_in(ERIN)
    page = detail(pages, proposal.proposal_id)
    reach = re.search(r'<dd class="text" id="external-reach">(.*?)</dd>', page, flags=re.S)
    assert reach is not None
    assert reach.group(1) == (
        "Not stated by the tool. Its declared side effect is external: it reaches people or "
        "systems outside this one."
    )


def test_the_email_is_approved_by_retyping_what_the_page_shows(
    mail_pages: tuple[Pages, FakeProvider],
) -> None:
    """The recipient re-typed as displayed; the agent then sends exactly one e-mail."""
    pages, outbox = mail_pages
    gate = pages.app.state.signoff.gate
    proposal = gate.propose(HELPDESK, "send_email", EMAIL)
    pages.sign_in(ERIN)
    form = hidden_fields(detail(pages, proposal.proposal_id), "approve")
    answer = pages.post_decision(proposal, {**form, "retype.to": " kim@partner.example "})
    assert answer.status_code == 303, answer.text
    token = gate.confirmation_token(HELPDESK, proposal.proposal_id)
    gate.execute(HELPDESK, proposal.proposal_id, token)
    assert [r.payload for r in outbox.records()] == [EMAIL]


def test_a_refund_page_notes_the_unit_and_restates_the_amount(pages: Pages) -> None:
    """The money field gets its unit note, and the Approve button says the amount."""
    proposal = pages.propose()
    pages.sign_in(Principal("alice", "acme", roles=frozenset({"refund_approver"})))
    page = detail(pages, proposal.proposal_id)
    note = "<code>amount_minor</code> is in units of 1/100 CNY: <code>19900</code> is ¥199.00."
    assert note in page
    assert ">Approve ¥199.00</button>" in page
    assert '<option value="wrong_amount">Wrong amount</option>' in page
    assert "Business state" in page


def test_a_reason_the_tool_does_not_offer_is_refused(pages: Pages) -> None:
    """A refund posted with the note's own reason: 400, nothing decided."""
    proposal = pages.propose()
    pages.sign_in(Principal("alice", "acme", roles=frozenset({"refund_approver"})))
    form = hidden_fields(detail(pages, proposal.proposal_id), "reject")
    answer = pages.post_decision(proposal, {**form, "reason_code": "wrong_words"})
    assert answer.status_code == 400
    assert "reason_code must be one of wrong_amount" in html.unescape(answer.text)
    assert pages.approvals(proposal) == 0


def test_the_note_is_rejected_with_its_own_reason(pages: Pages) -> None:
    """The customer rejects their note as "Wrong words"; history says Rejected in words."""
    note = pages.world.gate.propose(
        AGENT, "add_order_note", {"order_id": "ord_1001", "note": "line one\nline two"}
    )
    pages.sign_in(Principal("u_42", "acme"))
    page = detail(pages, note.proposal_id)
    assert '<option value="wrong_words">Wrong words</option>' in page
    assert "Wrong amount" not in page and "minor unit" not in page
    assert displayed(page) == ["ord_1001", "line one\nline two"]
    form = hidden_fields(page, "reject")
    assert pages.post_decision(note, {**form, "reason_code": "wrong_words"}).status_code == 303
    assert pages.world.gate.proposal(AGENT, note.proposal_id).status is ProposalStatus.DECLINED
    history = pages.client.get("/ui/history").text
    assert ">Rejected</span>" in history and ">declined<" not in history


@pytest.mark.parametrize(
    ("method", "path", "status", "title"),
    [
        ("GET", "/ui/no-such-page", 404, "Page not found"),
        ("GET", "/ui/proposals/prop_x/decision", 405, "Not allowed here"),
    ],
)
def test_errors_under_ui_are_pages(
    pages: Pages, method: str, path: str, status: int, title: str
) -> None:
    """An unknown page or a wrong method: the same status, as an HTML page with the headers."""
    pages.sign_in(Principal("alice", "acme"))
    response = pages.client.request(method, path)
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert f"<h1>{title}</h1>" in response.text
    assert "default-src 'none'" in response.headers["content-security-policy"]
    api = pages.client.get("/v1/no-such-endpoint")
    assert api.headers["content-type"].startswith("application/problem+json")


def test_a_crash_under_ui_is_a_503_page(pages: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug behind the inbox: a 503 page in words, never JSON and never a traceback."""
    pages.sign_in(Principal("alice", "acme", roles=frozenset({"refund_approver"})))

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail")

    monkeypatch.setattr(pages.app.state.signoff.gate, "inbox", broken)
    response = pages.client.get("/ui/inbox")
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("text/html")
    assert "<h1>Something went wrong</h1>" in response.text
    assert "secret internal detail" not in response.text and "Traceback" not in response.text
    assert response.headers["cache-control"] == "no-store"
