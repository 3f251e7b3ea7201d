"""The confirmation pages in a real browser: Debian's chromium, driven by Playwright.

One demo server (uvicorn in a thread, on a free port, on a temporary database)
serves the whole module, exactly as ``signoff serve --demo`` builds it; the
agent's side (propose, execute) goes through that server's gate, and every
test checks the demo provider's ledger or the audit log, not only the page.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Dialog,
    Page,
    Playwright,
    sync_playwright,
)

from signoff import Decision, DecisionKind, Principal, Proposal, ProposalStatus
from signoff.http import AppState, Settings, create_app, state_of
from signoff.web._headers import CONTENT_SECURITY_POLICY
from tests.conftest import AGENT

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-gpu",
    "--disable-quic",
]


def require_chromium() -> None:
    """Skip each browser test (so each one is counted) when chromium is missing; in CI, fail."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI"):
        pytest.fail(f"{CHROMIUM} is missing: .ci/run installs Debian's chromium", pytrace=False)
    pytest.skip(f"needs chromium: {CHROMIUM} is missing (apt-get install -y chromium)")


@dataclass
class Live:
    """The running demo server and the objects behind it."""

    base: str
    state: AppState

    def propose(self, order: str, amount: int = 19900, *, rationale: str | None = None) -> Proposal:
        arguments = {"order_id": order, "amount_minor": amount, "currency": "CNY", "reason": None}
        return self.state.gate.propose(AGENT, "refund_order", arguments, rationale=rationale)

    def url(self, proposal: Proposal, suffix: str = "") -> str:
        return f"{self.base}/ui/proposals/{proposal.proposal_id}{suffix}"

    def ledger(self, order: str) -> list[int]:
        assert self.state.demo is not None
        return [
            e.amount_minor for e in self.state.demo.provider.ledger("acme") if e.order_id == order
        ]

    def decisions(self, proposal: Proposal) -> int:
        events = self.state.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        return sum(e.kind.startswith("decision.") for e in events)

    def status(self, proposal: Proposal) -> ProposalStatus:
        return self.state.gate.proposal(AGENT, proposal.proposal_id).status


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    path = tmp_path_factory.mktemp("ui")
    app = create_app(Settings(demo=True, database_url=str(path / "signoff.db")))
    with running(app) as base:
        yield Live(base, state_of(app))


@contextmanager
def running(app: FastAPI) -> Iterator[str]:
    """The app served by uvicorn in a thread on a free port; its base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", ws="none", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    ready = threading.Event()
    for _ in range(600):
        if server.started:
            ready.set()
            break
        ready.wait(0.05)
    assert ready.is_set(), "the server did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    require_chromium()
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


def new_context(browser: Browser, **options: Any) -> BrowserContext:
    """A fresh browser profile (no cookies); generous timeouts for a loaded CI machine."""
    context = browser.new_context(**options)
    context.set_default_timeout(30_000)
    return context


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = new_context(browser)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    return context.new_page()


def sign_in(page: Page, live: Live, who: str) -> None:
    page.goto(f"{live.base}/ui/sign-in")
    page.get_by_role("button", name=f"Sign in as {who}").click()
    page.wait_for_url(re.compile(r"/ui/inbox$"))


def form_fields(page: Page, selector: str) -> dict[str, str | float | bool]:
    """The hidden inputs of a form on the page, as a forger would copy them."""
    fields: dict[str, str | float | bool] = page.eval_on_selector_all(
        f"{selector} input[type=hidden]",
        "nodes => Object.fromEntries(nodes.map(n => [n.name, n.value]))",
    )
    return fields


def test_approve_then_the_receipt_once_the_agent_executes(live: Live, page: Page) -> None:
    """Inbox → detail → Approve → result; the agent runs it; reload shows the receipt."""
    proposal = live.propose("ord_1001", rationale="The parcel arrived damaged.")
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    sign_in(page, live, "alice")
    page.get_by_role("link", name=proposal.preview.title).first.click()
    assert page.get_by_role("heading", level=1).inner_text() == "Refund ¥199.00 on order ord_1001"
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(r"/result$"))
    assert "Confirmed" in page.locator("#outcome-heading + p").inner_text()
    token = live.state.gate.confirmation_token(AGENT, proposal.proposal_id)
    assert token not in page.content()
    live.state.gate.execute(AGENT, proposal.proposal_id, token)
    page.reload()
    receipt = page.locator("dl[aria-labelledby=receipt-heading]").inner_text()
    assert "Succeeded" in receipt and proposal.request_key in receipt and "alice" in receipt
    assert live.ledger("ord_1001") == [19900]
    assert violations == []


def test_reject_with_a_reason_without_javascript(browser: Browser, live: Live) -> None:
    """With JavaScript off the forms still work: rejected, declined, no ledger entry."""
    proposal = live.propose("ord_1002")
    context = new_context(browser, java_script_enabled=False)
    try:
        page = context.new_page()
        sign_in(page, live, "alice")
        page.goto(live.url(proposal))
        page.get_by_label("Reason for rejecting").select_option("wrong_target")
        page.get_by_label("Details (optional)").fill("Wrong customer")
        page.get_by_role("button", name="Reject").click()
        page.wait_for_url(re.compile(r"/result$"))
        assert "Rejected: the operation will not run." in page.content()
    finally:
        context.close()
    assert live.status(proposal) is ProposalStatus.DECLINED
    assert live.ledger("ord_1002") == []


def test_double_click_approve_is_one_decision(live: Live, page: Page) -> None:
    """Two fast clicks (and a replay of the same form) record one approval."""
    proposal = live.propose("ord_1003")
    sign_in(page, live, "alice")
    page.goto(live.url(proposal))
    fields = form_fields(page, "form.approve")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    page.get_by_role("button", name="Approve").dblclick()
    page.wait_for_url(re.compile(r"/result(\?repeat=1)?$"))
    assert posts  # chromium may send one or two; the replay below is the second for sure
    replay = page.request.post(live.url(proposal, "/decision"), form=fields)
    assert replay.ok and "It was recorded once." in replay.text()
    assert live.decisions(proposal) == 1
    assert live.status(proposal) is ProposalStatus.CONFIRMED


def test_a_stale_second_tab_gets_already_decided(live: Live, context: BrowserContext) -> None:
    """Tab 1 approves; tab 2, opened before, gets 409 "already decided by alice"."""
    proposal = live.propose("ord_1004")
    first, second = context.new_page(), context.new_page()
    sign_in(first, live, "alice")
    first.goto(live.url(proposal))
    second.goto(live.url(proposal))
    first.get_by_role("button", name="Approve").click()
    first.wait_for_url(re.compile(r"/result$"))
    with second.expect_response(re.compile(r"/decision$")) as answer:
        second.get_by_role("button", name="Approve").click()
    assert answer.value.status == 409
    text = second.locator("main").inner_text()
    assert "Already decided" in text and "decided by alice at" in text
    assert "did not decide anything" in text
    assert live.decisions(proposal) == 1


def test_rationale_payloads_are_inert_text(live: Live, page: Page) -> None:
    """<script> and <img onerror> in the model's rationale render as text and never run."""
    payload = (
        "<script>window.__xss = 1; alert(1)</script>"
        '<img src=x onerror="window.__xss = 2; alert(2)">'
        "\u202eevil text"
    )
    proposal = live.propose("ord_1005", rationale=payload)
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    sign_in(page, live, "alice")
    page.goto(live.url(proposal))
    rationale = page.locator("#rationale")
    assert "<script>window.__xss = 1; alert(1)</script>" in rationale.inner_text()
    assert "⟨U+202E⟩evil text" in rationale.inner_text()
    assert rationale.locator("script, img").count() == 0
    assert page.evaluate("window.__xss") is None and dialogs == []
    assert "untrusted" in page.locator("#rationale-heading").inner_text().lower()


def test_a_post_without_the_csrf_token_is_403(live: Live, page: Page) -> None:
    """The signed-in approver's own browser, minus the token: refused, nothing decided."""
    proposal = live.propose("ord_1006")
    sign_in(page, live, "alice")
    page.goto(live.url(proposal))
    fields = form_fields(page, "form.approve")
    del fields["csrf_token"]
    response = page.request.post(live.url(proposal, "/decision"), form=fields)
    assert response.status == 403
    assert live.decisions(proposal) == 0 and live.ledger("ord_1006") == []


def test_without_the_role_no_button_and_a_forged_post_is_refused(
    live: Live, page: Page, browser: Browser
) -> None:
    """dave (auditor) sees it but no Approve; posting alice's form with his token is 403.
    carol (no role) is not in its circle: the page and the forged post are 404."""
    proposal = live.propose("ord_1007")
    alice = new_context(browser)
    try:
        alice_page = alice.new_page()
        sign_in(alice_page, live, "alice")
        alice_page.goto(live.url(proposal))
        fields = form_fields(alice_page, "form.approve")
    finally:
        alice.close()
    sign_in(page, live, "dave")
    page.goto(live.url(proposal))
    assert page.get_by_role("button", name="Approve").count() == 0
    assert "needs the role 'refund_approver'" in page.locator("#not-entitled").inner_text()
    dave_token = form_fields(page, "form.sign-out")["csrf_token"]
    forged = page.request.post(
        live.url(proposal, "/decision"), form={**fields, "csrf_token": dave_token}
    )
    assert forged.status == 403
    sign_in(page, live, "carol")
    hidden = page.goto(live.url(proposal))
    assert hidden is not None and hidden.status == 404
    carol_token = form_fields(page, "form.sign-out")["csrf_token"]
    forged = page.request.post(
        live.url(proposal, "/decision"), form={**fields, "csrf_token": carol_token}
    )
    assert forged.status == 404
    assert live.decisions(proposal) == 0


def test_another_tenants_proposal_id_is_404(live: Live, page: Page) -> None:
    """gina (globex) opening acme's proposal gets the plain not-found page."""
    proposal = live.propose("ord_1008")
    sign_in(page, live, "gina")
    response = page.goto(live.url(proposal))
    assert response is not None and response.status == 404
    assert proposal.preview.title not in page.content()


def test_high_risk_retype_mismatch_is_refused(live: Live, page: Page) -> None:
    """¥1,500.00 is high risk: a wrong re-type is 422 and undecided; the right one approves."""
    assert live.state.demo is not None
    live.state.demo.shop.add_order("acme", "ord_9100", owner="u_42", payable=500_000)
    proposal = live.propose("ord_9100", 150_000)
    sign_in(page, live, "alice")
    page.goto(live.url(proposal))
    assert page.get_by_role("button", name="Approve").inner_text() == "Approve ¥1,500.00"
    field = page.get_by_label(re.compile("Re-type the amount"))
    field.fill("1500")
    with page.expect_response(re.compile(r"/decision$")) as answer:
        page.get_by_role("button", name="Approve").click()
    assert answer.value.status == 422
    assert page.locator("#retype-error").is_visible()
    assert live.decisions(proposal) == 0
    page.get_by_label(re.compile("Re-type the amount")).fill("¥1,500.00")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_url(re.compile(r"/result$"))
    assert live.status(proposal) is ProposalStatus.CONFIRMED


def test_keyboard_order_and_a_phone_screen(live: Live, browser: Browser) -> None:
    """Tab reaches re-type, Approve, then the reject reason; nothing overflows 390 px."""
    assert live.state.demo is not None
    live.state.demo.shop.add_order("acme", "ord_9101", owner="u_42", payable=500_000)
    proposal = live.propose("ord_9101", 120_000)
    context = new_context(browser, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, live, "alice")
        page.goto(live.url(proposal))
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        order = []
        for _ in range(40):
            page.keyboard.press("Tab")
            order.append(
                page.evaluate("document.activeElement.id || document.activeElement.className")
            )
        assert (
            order.index("retype-amount_minor") < order.index("approve") < order.index("reason_code")
        )
        countdown = page.locator("time[data-countdown]").first.inner_text()
        assert re.fullmatch(r"\d+ min \d+ s left", countdown)
    finally:
        context.close()


def test_a_phone_shows_the_caption_full_width_and_the_retype_error_at_the_field(
    live: Live, browser: Browser
) -> None:
    """390 px: the parameters' caption spans the card (not a 66 px column); after a wrong
    re-type the error sits right under its field, which has the focus and is on screen."""
    assert live.state.demo is not None
    live.state.demo.shop.add_order("acme", "ord_9102", owner="u_42", payable=500_000)
    proposal = live.propose("ord_9102", 130_000)
    context = new_context(browser, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        sign_in(page, live, "alice")
        page.goto(live.url(proposal))
        caption = page.locator("table.params caption").bounding_box()
        card = page.locator("#op-heading").bounding_box()
        assert caption is not None and card is not None
        assert caption["width"] >= card["width"] - 1, (caption, card)
        assert caption["height"] < 120, caption  # a few lines, not one word per line
        field = page.locator("#retype-amount_minor")
        field.fill("1300")
        with page.expect_response(re.compile(r"/decision$")) as answer:
            page.get_by_role("button", name=re.compile("^Approve")).click()
        assert answer.value.status == 422
        page.wait_for_load_state()
        assert page.evaluate("document.activeElement.id") == "retype-amount_minor"
        box = page.locator("#retype-amount_minor").bounding_box()
        error = page.locator("#retype-error").bounding_box()
        assert box is not None and error is not None
        assert 0 <= error["y"] - (box["y"] + box["height"]) < 24, (box, error)
        assert box["y"] >= 0 and error["y"] + error["height"] <= 844, (box, error)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        assert live.decisions(proposal) == 0
    finally:
        context.close()


@pytest.mark.slow
def test_the_screenshots_script_works_as_documented(tmp_path: Path) -> None:
    """`scripts/ui_screenshots.py --out DIR` (docs/UI.md): a real demo server, two PNGs."""
    require_chromium()
    script = Path(__file__).resolve().parents[2] / "scripts" / "ui_screenshots.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNOFF_")}
    done = subprocess.run(
        [sys.executable, str(script), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for name in ("ui-inbox.png", "ui-detail.png"):
        png = (tmp_path / name).read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 10_000


# The live inbox (server-sent events from the audit chain; static/live.js under the CSP).
BOB = Principal("bob", "acme", roles=frozenset({"refund_approver"}))


def test_a_new_proposal_appears_and_a_decided_one_leaves_without_a_reload(
    live: Live, page: Page
) -> None:
    """alice's open inbox gains the agent's new proposal, then loses it when bob approves."""
    violations: list[str] = []
    page.on(
        "console", lambda m: violations.append(m.text) if "Content Security" in m.text else None
    )
    sign_in(page, live, "alice")
    loads: list[str] = []
    page.on("load", lambda _: loads.append(page.url))
    proposal = live.propose("ord_1040")
    link = page.get_by_role("link", name=proposal.preview.title)
    link.wait_for(state="visible")
    live.state.gate.decide(
        BOB,
        proposal.proposal_id,
        Decision(DecisionKind.APPROVE, proposal.version),
        idempotency_key="bob-live-1",
    )
    link.wait_for(state="detached")
    assert page.locator("[data-live-status]").inner_text() == "Updated just now."
    assert loads == []  # no navigation: the list was swapped in place
    assert violations == []
    assert "connect-src 'self'" in CONTENT_SECURITY_POLICY


def stream_frames(
    live: Live, cookies: dict[str, str], headers: dict[str, str], n: int
) -> list[Any]:
    """Read ``n`` events from /ui/events as an EventSource would."""
    frames: list[Any] = []
    client = httpx.Client(base_url=live.base, cookies=cookies, timeout=30)
    with client, client.stream("GET", "/ui/events", headers=headers) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        event: dict[str, str] = {}
        for line in response.iter_lines():
            if line == "" and "data" in event:
                frames.append(event)
                event = {}
                if len(frames) == n:
                    break
            elif ":" in line and not line.startswith(":"):
                key, _, value = line.partition(":")
                event[key] = value.strip()
    return frames


def test_events_carry_only_a_type_and_resume_after_last_event_id(live: Live, page: Page) -> None:
    """id = audit seq; data = type and seq, no proposal content; Last-Event-ID resumes."""
    sign_in(page, live, "alice")
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    first = live.propose("ord_1041")
    second = live.propose("ord_1042")
    seqs = [
        e.seq
        for e in live.state.gate.audit_events(Principal("dave", "acme", frozenset({"auditor"})))
        if e.proposal_id in (first.proposal_id, second.proposal_id) and e.kind == "proposal.created"
    ]
    frames = stream_frames(live, cookies, {"Last-Event-ID": str(seqs[0] - 1)}, 2)
    assert [int(f["id"]) for f in frames] == seqs
    assert [json.loads(f["data"]) for f in frames] == [
        {"type": "proposal.awaiting_confirmation", "seq": s} for s in seqs
    ]
    assert all(f["event"] == "inbox" for f in frames)
    assert first.proposal_id not in json.dumps(frames)
    resumed = stream_frames(live, cookies, {"Last-Event-ID": str(seqs[0])}, 1)
    assert int(resumed[0]["id"]) == seqs[1]


def test_the_stream_needs_a_session(live: Live) -> None:
    with httpx.Client(base_url=live.base, timeout=30) as client:
        refused = client.get("/ui/events")
    assert refused.status_code == 401
