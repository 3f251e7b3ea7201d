"""docs/TOOLS.md's send_email on the confirmation page, in Debian's chromium, on a phone screen.

No money text, no state panel, the body's line breaks kept, values wrapped between
words, and the recipient re-typed by its label exactly as the page shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page

from signoff import Catalog, Gate, Principal, Proposal, ProposalStatus, SQLiteStore
from signoff.http import Settings, create_app, mint_dev_token
from signoff.testing import FakeProvider
from signoff.web import include_ui
from tests.docs_tool import load_first_tool
from tests.web.test_browser import browser, new_context, playwright, running

__all__ = ["browser", "playwright"]  # the shared chromium fixtures

SETTINGS = Settings(demo=True)
HELPDESK = Principal("u_7", "acme", actor="agent:helpdesk")
BODY = "Hello Kim,\n\nthe invoice for order 2024-117 is attached.\nRegards, Erin"
EMAIL = {"to": "kim.lindqvist@partner-company.example", "subject": "Your invoice", "body": BODY}
MONEY_WORDS = ("minor unit", "Amount", "Wrong amount", "¥", "1/100", "currency")
# Words split over two lines, unless a word alone is wider than its box.
BROKEN_WORDS = """selector => {
  const broken = [];
  for (const box of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const rects = [...range.getClientRects()].filter(r => r.width > 0);
        const lines = new Set(rects.map(r => Math.round(r.top)));
        const width = rects.reduce((sum, r) => sum + r.width, 0);
        if (lines.size > 1 && width < box.clientWidth) {
          broken.push(word[0]);
        }
      }
    }
  }
  return broken;
}"""


@dataclass
class MailLive:
    base: str
    gate: Gate
    outbox: FakeProvider

    def propose(self) -> Proposal:
        return self.gate.propose(HELPDESK, "send_email", EMAIL)


@pytest.fixture(scope="module")
def mail_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MailLive]:
    path = tmp_path_factory.mktemp("mail")
    module = load_first_tool(path)
    outbox = FakeProvider(path / "outbox.sqlite")
    store = SQLiteStore(path / "signoff.db")
    store.migrate()
    gate = Gate(Catalog([module.SendEmail(outbox)]), store, token_key=b"k" * 32)
    app = create_app(SETTINGS, gate=gate, extras=[include_ui])
    try:
        with running(app) as base:
            yield MailLive(base, gate, outbox)
    finally:
        store.close()


def sign_in_as_erin(page: Page, base: str) -> None:
    token = mint_dev_token(
        SETTINGS, subject="erin", tenant="acme", roles=["email_approver"], now=datetime.now(UTC)
    )
    page.goto(f"{base}/ui/sign-in")
    page.get_by_label(re.compile("Your JWT")).fill(token)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.wait_for_url(re.compile(r"/ui/inbox$"))


@pytest.fixture
def phone(browser: Browser) -> Iterator[Page]:
    context = new_context(browser, viewport={"width": 390, "height": 844})
    yield context.new_page()
    context.close()


def test_an_email_reads_as_an_email_on_a_phone(mail_live: MailLive, phone: Page) -> None:
    """No money, no state panel, line breaks kept, words whole, nothing wider than 390 px."""
    proposal = mail_live.propose()
    sign_in_as_erin(phone, mail_live.base)
    phone.goto(f"{mail_live.base}/ui/proposals/{proposal.proposal_id}")
    text = phone.locator("main").inner_text()
    assert [word for word in MONEY_WORDS if word in text] == []
    assert phone.locator("#state-heading").count() == 0
    body = phone.locator("tr", has_text="Message").locator("td.display")
    assert body.inner_text() == BODY
    assert phone.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert phone.evaluate(BROKEN_WORDS, "h1, td.display, dd code") == []
    assert phone.locator(".status").first.inner_text() == "Awaiting confirmation"


def test_the_recipient_is_retyped_by_its_label(mail_live: MailLive, phone: Page) -> None:
    """Type what the page displays under "Recipient": approved; the agent sends one e-mail."""
    proposal = mail_live.propose()
    sign_in_as_erin(phone, mail_live.base)
    phone.goto(f"{mail_live.base}/ui/proposals/{proposal.proposal_id}")
    shown = phone.locator("tr", has_text="Recipient").locator("td.display").inner_text()
    phone.get_by_label("Re-type the recipient as shown above, to confirm it").fill(shown)
    phone.get_by_role("button", name="Approve").click()
    phone.wait_for_url(re.compile(r"/result$"))
    assert "Confirmed" in phone.locator("#outcome-heading + p").inner_text()
    assert mail_live.gate.proposal(HELPDESK, proposal.proposal_id).status is (
        ProposalStatus.CONFIRMED
    )
    token = mail_live.gate.confirmation_token(HELPDESK, proposal.proposal_id)
    mail_live.gate.execute(HELPDESK, proposal.proposal_id, token)
    sent: list[dict[str, Any]] = [
        r.payload for r in mail_live.outbox.records() if r.request_key == proposal.request_key
    ]
    assert sent == [EMAIL]


def test_the_unknown_page_is_a_page(mail_live: MailLive, phone: Page, tmp_path: Path) -> None:
    """A mistyped /ui address shows the error page, not JSON."""
    sign_in_as_erin(phone, mail_live.base)
    response = phone.goto(f"{mail_live.base}/ui/proposal/typo")
    assert response is not None and response.status == 404
    assert phone.get_by_role("heading", level=1).inner_text() == "Page not found"
