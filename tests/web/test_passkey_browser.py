"""Passkeys in real Chromium with a CDP virtual authenticator: enrol, approve, verify offline.

The page is served on ``localhost`` (a secure context whose name can be a
WebAuthn RP ID); ``WebAuthn.addVirtualAuthenticator`` gives the browser a
platform authenticator with user verification, so the ceremonies run exactly
as with a person's device. The server's checks are asserted on the gate, the
provider's ledger and an offline verification of the exported bundle.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote_plus

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Playwright, sync_playwright

from signoff import Principal, Proposal
from signoff.http import Settings, create_app, state_of
from signoff.proof import PublicKeys, verify_bundle
from tests.conftest import AGENT, APPROVER
from tests.web.test_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    Live,
    new_context,
    require_chromium,
    running,
)

AUDITOR = Principal("dave", "acme", frozenset({"auditor"}))
HIGH = 100_000  # the demo's high-risk threshold: policy device = or_retype


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    path = tmp_path_factory.mktemp("passkeys")
    app = create_app(Settings(demo=True, database_url=str(path / "signoff.db")))
    with running(app) as base:
        yield Live(base.replace("127.0.0.1", "localhost"), state_of(app))


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    require_chromium()
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    args = [*CHROMIUM_ARGS, "--host-resolver-rules=MAP localhost 127.0.0.1"]
    browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
    yield browser
    browser.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = new_context(browser)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext) -> Page:
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    # Secure Payment Confirmation's dialog accepts itself, as a person pressing Verify would.
    cdp.send("Page.setSPCTransactionMode", {"mode": "autoAccept"})
    return page


def enrol(page: Page, live: Live) -> None:
    page.goto(f"{live.base}/ui/sign-in")
    page.get_by_role("button", name="Sign in as alice").click()
    page.wait_for_url(re.compile(r"/ui/inbox$"))
    page.goto(f"{live.base}/ui/passkeys")
    page.get_by_role("button", name="Add a passkey").click()
    page.wait_for_url(re.compile(r"/ui/passkeys\?added=1$"))


def high_risk(live: Live, amount: int = HIGH) -> Proposal:
    arguments = {"order_id": "ord_9200", "amount_minor": amount, "currency": "CNY", "reason": None}
    return live.state.gate.propose(AGENT, "refund_order", arguments)


def capture(page: Page, live: Live, proposal: Proposal) -> dict[str, Any]:
    """Approve on the page, but stop the signed form on its way out and return its fields."""
    decision = re.compile(r".*/decision$")
    page.route(decision, lambda route: route.abort())
    page.goto(live.url(proposal))
    # Wait for the abort itself: unrouting on the request event alone could let it through.
    with page.expect_event("requestfailed", lambda r: r.url.endswith("/decision")) as failed:
        page.get_by_role("button", name=re.compile(r"^Approve")).click()
    page.unroute(decision)
    body = failed.value.post_data or ""
    return {k: unquote_plus(v) for k, _, v in (item.partition("=") for item in body.split("&"))}


def refused(page: Page, live: Live, proposal: Proposal, fields: dict[str, Any], key: str) -> str:
    """Post a decision form as a forger would; it must be refused (403); returns the page."""
    form = {**fields, "idempotency_key": "ui_" + key * 32}
    response = page.request.post(live.url(proposal, "/decision"), form=form)
    assert response.status == 403, response.text()
    return response.text()


def test_enrol_approve_execute_export_and_verify_offline(live: Live, page: Page) -> None:
    """A high-risk refund approved with the passkey runs once; offline, the device's signature
    verifies, but a demo sign-in vouches for no enrolment: that, and only that, fails."""
    enrol(page, live)
    [passkey] = live.state.gate.passkeys(APPROVER)
    proposal = high_risk(live)
    page.goto(live.url(proposal))
    assert page.locator("form.approve[data-device-options]").count() == 1
    page.get_by_role("button", name=re.compile(r"^Approve")).click()
    page.wait_for_url(re.compile(r"/result"))
    token = live.state.gate.confirmation_token(AGENT, proposal.proposal_id)
    live.state.gate.execute(AGENT, proposal.proposal_id, token)
    assert live.ledger("ord_9200") == [HIGH]
    assert live.state.gate.passkeys(APPROVER)[0].sign_count > passkey.sign_count
    proof = live.state.gate.proof
    assert proof is not None
    bundle = json.loads(json.dumps(live.state.gate.export_bundle("acme")))
    report = verify_bundle(bundle, PublicKeys(proof.keys.public_jwks()))
    assert {f.code for f in report.findings} == {"device_enrolment_unvouched"}, report.findings
    assert all("no identity provider's evidence" in f.message for f in report.findings)
    [registered] = [
        e.payload()
        for e in live.state.gate.audit_events(AUDITOR)
        if e.kind == "passkey.registered" and e.payload()["credential_id"] == passkey.credential_id
    ]
    # Asked for (attestation "direct") and kept: the virtual authenticator gives "packed".
    assert registered["attestation"]["fmt"] == "packed"
    assert "evidence" not in registered


def test_assertions_for_another_proposal_replayed_or_from_another_origin_are_refused(
    live: Live, page: Page
) -> None:
    """The server refuses each; no decision is recorded and nothing is refunded."""
    enrol(page, live)
    a, b = high_risk(live, HIGH + 1), high_risk(live, HIGH + 2)
    held = capture(page, live, a)
    # Another proposal's challenge: A's signed fields posted as a decision on B.
    assert "not issued to this page" in refused(page, live, b, held, "b")
    # Another origin: the same assertion with the client data naming a phishing origin.
    client = json.loads(held["device_assertion"])
    data = json.loads(base64.urlsafe_b64decode(client["response"]["clientDataJSON"] + "=="))
    data["origin"] = "https://signoff.example.evil"
    client["response"]["clientDataJSON"] = (
        base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()
    )
    forged = {**held, "device_assertion": json.dumps(client)}
    assert "origin" in refused(page, live, a, forged, "d")
    # A replay: approve B with a fresh assertion, then post A's older one (its counter is behind).
    page.goto(live.url(b))
    page.get_by_role("button", name=re.compile(r"^Approve")).click()
    page.wait_for_url(re.compile(r"/result"))
    assert "sign count" in refused(page, live, a, held, "e")
    events = live.state.gate.audit_events(AGENT, proposal_id=a.proposal_id)
    assert not [e for e in events if e.kind.startswith("decision.")]
    assert live.state.gate.proposal(AGENT, a.proposal_id).version == 1
    assert live.ledger("ord_9200") == [HIGH]  # only the first test's refund


def test_a_passkey_signed_approval_submitted_twice_answers_the_first_decision(
    live: Live, page: Page
) -> None:
    """Issue 23: the second submit carries a spent assertion; it gets the first answer
    (303 to the result), not `device_signature_invalid`, and no refusal is audited."""
    enrol(page, live)
    proposal = high_risk(live, HIGH + 3)
    held = capture(page, live, proposal)
    url = live.url(proposal, "/decision")
    first = page.request.post(url, form=held, max_redirects=0)
    again = page.request.post(url, form=held, max_redirects=0)
    assert (first.status, again.status) == (303, 303), again.text()
    assert again.headers["location"] == first.headers["location"] + "?repeat=1"
    events = live.state.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
    assert [e.kind for e in events if e.kind.startswith("decision.")] == ["decision.approved"]
    assert not [e for e in events if e.kind == "refusal"]


def _client_data(live: Live, proposal: Proposal) -> dict[str, Any]:
    [event] = [
        e
        for e in live.state.gate.audit_events(AGENT, proposal_id=proposal.proposal_id)
        if e.kind == "decision.approved"
    ]
    raw = event.payload()["device"]["client_data_json"]
    return dict(json.loads(base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))))


def test_a_money_moving_approval_uses_secure_payment_confirmation_or_falls_back(
    live: Live, page: Page
) -> None:
    """A refund moves money: the approve form carries the payee and amount for the browser's
    own SPC dialog. Where the browser offers SPC, the signed client data is payment.get and
    names exactly those (checked again offline); where it does not (Chromium on Linux says
    `unavailable-feature-not-enabled`), the page falls back to WebAuthn and the approval
    goes through the same way. Either way the device signature verifies offline."""
    enrol(page, live)
    proposal = high_risk(live, HIGH + 4)
    page.goto(live.url(proposal))
    form = page.locator("form.approve")
    payment = json.loads(form.get_attribute("data-payment") or "null")
    assert payment["total"] == {"currency": "CNY", "value": "1000.04"}
    assert payment["payeeName"] == proposal.preview.title
    available = page.evaluate(
        """async () => window.PaymentRequest
            && typeof PaymentRequest.securePaymentConfirmationAvailability === "function"
            ? await PaymentRequest.securePaymentConfirmationAvailability() : "no-api" """
    )
    page.get_by_role("button", name=re.compile(r"^Approve")).click()
    page.wait_for_url(re.compile(r"/result"))
    client = _client_data(live, proposal)
    if available == "available":
        assert client["type"] == "payment.get"
        shown = client["payment"]
        assert (shown["payeeName"], shown["total"]) == (payment["payeeName"], payment["total"])
    else:
        assert client["type"] == "webauthn.get", available
    proof = live.state.gate.proof
    assert proof is not None
    report = verify_bundle(
        live.state.gate.export_bundle("acme"), PublicKeys(proof.keys.public_jwks())
    )
    # The demo's sign-in vouches for no enrolment; the device's signature itself verifies.
    assert {f.code for f in report.findings} == {"device_enrolment_unvouched"}, report.findings
