"""The pages and e-mails in the person's language and time zone; machine values never change."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from signoff import Principal
from signoff._i18n import localizer, negotiate
from signoff.http import DemoObjects, Settings, create_app, mint_dev_token
from signoff.notify import compose
from signoff.notify._events import PROPOSAL_AWAITING, Notification
from signoff.web import include_ui
from tests.conftest import AGENT, APPROVER, REFUND, World
from tests.web.conftest import hidden_fields

ZONED = Settings(demo=True, time_zones=(("acme", "Asia/Shanghai"), ("*", "Europe/Berlin")))


def _client(world: World, settings: Settings = ZONED) -> TestClient:
    app = create_app(
        settings, gate=world.gate, demo=DemoObjects(world.shop, world.provider), extras=[include_ui]
    )
    return TestClient(app, base_url="http://127.0.0.1")


def _sign_in(client: TestClient, person: Principal, **claims: str) -> None:
    """Sign in with a development token carrying ``claims`` too (``locale``, ``zoneinfo``)."""
    import jwt

    token = mint_dev_token(
        ZONED,
        subject=person.subject,
        tenant=person.tenant,
        roles=sorted(person.roles),
        now=datetime.now(UTC),
    )
    if claims:
        body = jwt.decode(token, options={"verify_signature": False})
        secret = ZONED.effective_hs256_secret()
        assert secret is not None
        token = jwt.encode({**body, **claims}, secret, algorithm="HS256")
    page = client.get("/ui/sign-in")
    done = client.post(
        "/ui/sign-in", data={**hidden_fields(page.text), "token": token}, follow_redirects=False
    )
    assert done.status_code == 303, done.text


def test_the_detail_page_in_chinese_with_the_tenants_time_and_unchanged_machine_values(
    world: World,
) -> None:
    """Accept-Language zh-CN: words in Chinese, times in Asia/Shanghai with +08:00, the amount
    also as 人民币 199.00 元; machine values, digest and recorded display value as they were."""
    client = _client(world)
    _sign_in(client, APPROVER)
    proposal = world.gate.propose(AGENT, "refund_order", REFUND)
    html = client.get(
        f"/ui/proposals/{proposal.proposal_id}", headers={"Accept-Language": "zh-CN,zh;q=0.9"}
    ).text
    assert '<html lang="zh-CN">' in html
    for words in ("将要执行的操作", "机器值", "代理的说明", "不可信", "拒绝原因", "批准 ¥199.00"):
        assert words in html, words
    assert "人民币 199.00 元" in html and "¥199.00" in html
    shanghai = proposal.expires_at.astimezone(localizer(zone_name="Asia/Shanghai").zone)
    assert f"{shanghai:%Y-%m-%d %H:%M:%S} +08:00" in html
    assert "<code>19900</code>" in html and proposal.args_digest in html
    english = client.get(f"/ui/proposals/{proposal.proposal_id}").text
    assert '<html lang="en">' in english and "What will run" in english


def test_the_identity_tokens_locale_and_zoneinfo_come_first(world: World) -> None:
    """A token claiming zh-CN and America/New_York: Chinese and -05:00, whatever the browser."""
    client = _client(world)
    _sign_in(client, APPROVER, locale="zh-CN", zoneinfo="America/New_York")
    proposal = world.gate.propose(AGENT, "refund_order", REFUND)
    html = client.get(
        f"/ui/proposals/{proposal.proposal_id}", headers={"Accept-Language": "en"}
    ).text
    assert "将要执行的操作" in html
    new_york = proposal.expires_at.astimezone(localizer(zone_name="America/New_York").zone)
    assert f"{new_york:%Y-%m-%d %H:%M:%S %z}"[:-2] in html


def test_the_inbox_in_chinese_counts_with_the_catalogs_plural(world: World) -> None:
    client = _client(world)
    _sign_in(client, APPROVER)
    world.gate.propose(AGENT, "refund_order", REFUND)
    world.gate.propose(AGENT, "refund_order", {**REFUND, "order_id": "ord_1002"})
    html = client.get("/ui/inbox", headers={"Accept-Language": "zh-CN"}).text
    assert "等待您的决定" in html and "您可以决定的提案共 2 项" in html
    assert "中风险" in html


@pytest.mark.parametrize(
    ("claim", "header", "expected"),
    [
        (None, "zh-CN,zh;q=0.9,en;q=0.8", "zh_CN"),
        (None, "fr-FR, zh-Hans;q=0.5", "zh_CN"),
        (None, "zh-TW", "en"),  # Traditional Chinese is not offered: English, not a guess
        ("zh-CN", "en", "zh_CN"),
        ("de", "zh-CN", "zh_CN"),
        (None, "en;q=0.1, zh-CN;q=0.9", "zh_CN"),
        (None, None, "en"),
    ],
)
def test_language_negotiation(claim: str | None, header: str | None, expected: str) -> None:
    assert negotiate(claim, header) == expected


def test_an_email_in_chinese_with_the_deadline_in_the_tenants_zone() -> None:
    notification = Notification(
        "evt_1",
        PROPOSAL_AWAITING,
        "acme",
        1,
        {
            "title": "Refund ¥199.00 on order ord_1001",
            "requester": "u_42",
            "required_role": "refund_approver",
            "expires_at": "2026-09-01T06:20:00Z",
            "proposal_id": "prop_1",
        },
        "refund_approver",
        "https://signoff.example/ui/proposals/prop_1",
    )
    message = compose(
        notification,
        sender="signoff@example.com",
        to=["alice@example.com"],
        now=datetime(2026, 9, 1, 6, 5, tzinfo=UTC),
        localizer=localizer("zh_CN", "Asia/Shanghai"),
    )
    body = message.get_content()
    assert message["Subject"] == "等待您的决定：Refund ¥199.00 on order ord_1001"
    assert "2026-09-01 14:20:00 +08:00" in body and "请打开确认页面" in body
    assert message["Content-Language"] == "zh-CN"
    english = compose(
        notification, sender="s@example.com", to=["a@example.com"], now=datetime.now(UTC)
    ).get_content()
    assert "2026-09-01 06:20:00 +00:00" in english and "Open the confirmation page" in english


def test_every_message_has_a_chinese_translation() -> None:
    """A new string on the page or in an e-mail without a translation fails here."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import catalog

    assert catalog.missing() == {}


def test_times_carry_their_offset() -> None:
    moment = datetime(2026, 9, 1, 6, 20, tzinfo=UTC)
    assert localizer(zone_name="Asia/Shanghai").when(moment) == "2026-09-01 14:20:00 +08:00"
    assert localizer(zone_name="Asia/Kolkata").when(moment) == "2026-09-01 11:50:00 +05:30"
    assert localizer(zone_name="Not/A_Zone").when(moment) == "2026-09-01 06:20:00 +00:00"
    assert (
        localizer(zone_name="America/New_York").when(moment + timedelta(days=90)).endswith("-05:00")
    )
