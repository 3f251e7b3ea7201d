"""Security headers: no framing, no inline code, nothing cached, on every /ui response."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from signoff.web._headers import CONTENT_SECURITY_POLICY, SECURITY_HEADERS
from signoff.web._render import TEMPLATES
from tests.conftest import APPROVER
from tests.web.conftest import Pages


@pytest.mark.parametrize(
    "path", ["/ui/sign-in", "/ui/inbox", "/ui/proposals/prop_nope", "/ui/static/ui.css"]
)
def test_pages_and_static_files_carry_the_security_headers(pages: Pages, path: str) -> None:
    """CSP with frame-ancestors 'none', X-Frame-Options DENY, nosniff, no referrer."""
    pages.sign_in(APPROVER)
    response = pages.client.get(path)
    csp = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_pages_are_never_cached(pages: Pages) -> None:
    """A decision page must not come back from a cache or the back button's store."""
    assert pages.client.get("/ui/sign-in").headers["cache-control"] == "no-store"


def test_the_api_keeps_its_own_headers(pages: Pages) -> None:
    """The middleware touches /ui only; the JSON API is not framed by browsers anyway."""
    assert "content-security-policy" not in pages.client.get("/healthz").headers


def test_the_policy_allows_no_inline_script_or_style() -> None:
    """style-src and script-src are 'self' only: no inline, no eval, no data: URLs."""
    directives = dict(d.split(" ", 1) for d in CONTENT_SECURITY_POLICY.split("; "))
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["default-src"] == "'none'" and directives["form-action"] == "'self'"


@pytest.mark.parametrize("template", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_templates_hold_no_inline_script_style_or_handler(template: str) -> None:
    """Every <script> has a src; no style= attribute, <style> block or on*= handler."""
    html = (TEMPLATES / template).read_text()
    assert all("src=" in tag for tag in re.findall(r"<script[^>]*>", html))
    assert not re.search(r"<style|\sstyle=|\son[a-z]+=", html)


DOCS_UI = Path(__file__).resolve().parents[2] / "docs" / "UI.md"


def test_docs_ui_names_the_headers_and_scripts_the_page_really_sends(pages: Pages) -> None:
    """docs/UI.md quotes the CSP and every security header exactly, and names each script."""
    docs = " ".join(DOCS_UI.read_text().split())
    headers = pages.client.get("/ui/sign-in").headers
    for name, value in SECURITY_HEADERS.items():
        assert headers[name] == value
        assert f"`{name}: {value}`" in docs, name
    scripts = re.findall(
        r'<script src="/ui/(static/[a-z_]+\.js)"', (TEMPLATES / "base.html").read_text()
    )
    assert scripts
    for script in scripts:
        assert f"`{script}`" in docs, script
    words = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
    assert f"{words[len(scripts)]} external files" in docs
