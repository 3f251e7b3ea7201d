"""The page in Simplified Chinese in real Chromium: a browser whose language is zh-CN reads the
proposal in Chinese with Shanghai time and approves it; the refund happens once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from playwright.sync_api import Browser

from signoff.http import Settings, create_app, state_of
from tests.conftest import AGENT
from tests.web.test_browser import (  # noqa: F401 - the module's browser fixtures
    Live,
    browser,
    new_context,
    playwright,
    running,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def live_zh(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    path = tmp_path_factory.mktemp("ui-zh")
    settings = Settings(
        demo=True, database_url=str(path / "signoff.db"), time_zones=(("acme", "Asia/Shanghai"),)
    )
    app = create_app(settings)
    with running(app) as base:
        yield Live(base, state_of(app))


def test_the_page_in_chinese_in_chromium(
    browser: Browser,  # noqa: F811
    live_zh: Live,
    tmp_path: Path,
) -> None:
    proposal = live_zh.propose("ord_1042", rationale="客户说包裹是空的")
    context = new_context(browser, locale="zh-CN", timezone_id="Asia/Shanghai")
    try:
        page = context.new_page()
        page.goto(f"{live_zh.base}/ui/sign-in")
        page.get_by_role("button", name="Sign in as alice").click()
        page.wait_for_url(re.compile(r"/ui/inbox$"))
        assert page.get_by_role("heading", name="等待您的决定").is_visible()
        page.goto(live_zh.url(proposal))
        assert page.locator("html").get_attribute("lang") == "zh-CN"
        assert page.get_by_role("heading", name="将要执行的操作").is_visible()
        assert page.get_by_text("人民币 199.00 元").is_visible()
        local = proposal.expires_at.astimezone(ZoneInfo("Asia/Shanghai"))
        assert page.get_by_text(f"{local:%Y-%m-%d %H:%M:%S} +08:00").first.is_visible()
        machine = page.locator("td.machine code").first.inner_text()
        assert machine == '"ord_1042"'
        page.screenshot(path=str(tmp_path / "detail-zh.png"), full_page=True)
        page.get_by_role("button", name="批准 ¥199.00").click()
        page.wait_for_url(re.compile(r"/result$"))
        assert page.get_by_text("已确认").first.is_visible()
    finally:
        context.close()
    token = live_zh.state.gate.confirmation_token(AGENT, proposal.proposal_id)
    assert token is not None
    live_zh.state.gate.execute(AGENT, proposal.proposal_id, token, idempotency_key="zh-1")
    assert live_zh.ledger("ord_1042") == [19900]
