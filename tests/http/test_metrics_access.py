"""Issue 23: `/metrics` is not for strangers.

It answered anyone, with the request counts of the whole deployment. Now a Prometheus
scraper presents `SIGNOFF_METRICS_TOKEN`, or a person holding `signoff_admin` (token and
role directory) presents their JWT; the counters carry no tenant label.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from signoff import Principal
from tests.conftest import APPROVER
from tests.http.conftest import assert_problem
from tests.redteam import STORES, serve

SCRAPE = "s" * 40
OLGA = Principal("olga", "acme", frozenset({"signoff_admin"}))


@pytest.mark.parametrize("store", STORES)
def test_metrics_need_the_scrape_token_or_an_admin(store: str, tmp_path: Path) -> None:
    with serve(store, tmp_path, metrics_token=SCRAPE) as served:
        get = served.client.get
        assert_problem(get("/metrics"), 401, "not_authenticated")
        assert_problem(
            get("/metrics", headers={"Authorization": "Bearer " + "x" * 40}),
            401,
            "not_authenticated",
        )
        assert_problem(get("/metrics", headers=served.auth(APPROVER)), 403, "forbidden")
        scraped = get("/metrics", headers={"Authorization": f"Bearer {SCRAPE}"})
        assert scraped.status_code == 200
        assert "signoff_http_requests_total" in scraped.text
        assert "acme" not in scraped.text  # no tenant label: nobody's traffic stands out
        assert get("/metrics", headers=served.auth(OLGA)).status_code == 200
        served.directory.revoke("acme", "olga", "signoff_admin", by="ops")
        assert_problem(get("/metrics", headers=served.auth(OLGA)), 403, "forbidden")


def test_the_scrape_token_is_long_and_never_printed(tmp_path: Path) -> None:
    from signoff.http import Settings

    with pytest.raises(ValueError, match="32"):
        Settings(demo=True, metrics_token="short")
    assert SCRAPE not in repr(Settings(demo=True, metrics_token=SCRAPE))
