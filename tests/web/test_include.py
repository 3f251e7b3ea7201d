"""The pages ship with `signoff serve`: registered in EXTRAS, a pinned public surface."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

import signoff.web
from signoff.http import Settings, create_app
from signoff.http._extras import EXTRAS


def test_the_pages_are_a_default_extra(tmp_path: Path) -> None:
    """create_app without extras= (as `signoff serve` builds it) serves /ui and its static files."""
    assert "signoff.web:include_ui" in EXTRAS
    app = create_app(Settings(demo=True, database_url=str(tmp_path / "signoff.db")))
    with TestClient(app) as client:
        assert client.get("/ui/sign-in").status_code == 200
        script = client.get("/ui/static/countdown.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert client.get("/ui", follow_redirects=False).headers["location"] == "/ui/inbox"
        assert client.get("/ui/").url.path == "/ui/sign-in"
        assert not any(
            path.startswith("/ui") for path in client.get("/openapi.json").json()["paths"]
        )


def test_public_surface_is_pinned() -> None:
    """What signoff.web exports, sorted."""
    assert signoff.web.__all__ == [
        "DEMO_USERS",
        "DemoUser",
        "LoginProvider",
        "SignIn",
        "include_ui",
        "install_ui",
    ]
