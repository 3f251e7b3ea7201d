"""Issue 23: the page is not a way around the approval surfaces (PROTOCOL rule 14).

With decisions allowed only on the page, a token issued to `evil-crm` is refused on the
API; posted to `/ui/sign-in`, it opened a session whose decisions counted as `page`. The
session now remembers the client of the token it was opened with, and the rule applies
to it too. Both stores; the proposal's status and the audit are what is checked.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import APPROVER
from tests.http.conftest import assert_problem
from tests.redteam import STORES, serve, sign_in_with_token


@pytest.mark.parametrize("store", STORES)
def test_a_page_session_opened_with_another_clients_token_cannot_decide(
    store: str, tmp_path: Path
) -> None:
    with serve(store, tmp_path, approval_surfaces=("page",)) as served:
        proposal = served.proposed()
        assert_problem(
            served.decide(proposal, APPROVER, client="evil-crm"), 403, "surface_not_allowed"
        )
        signed = sign_in_with_token(served, served.token(APPROVER, client="evil-crm"))
        assert signed.status_code == 303
        refused = served.decide_on_page(proposal)
        assert refused.status_code == 403, refused.text
        assert "evil-crm" in refused.text
        assert served.state.gate.proposal(APPROVER, proposal["proposal_id"]).version == 1
        assert served.audit("decision.approved") == []
        refusals = [e.payload() for e in served.audit("refusal")]
        assert [(r["code"], r["surface"], r.get("signed_in_client")) for r in refusals] == [
            ("surface_not_allowed", "evil-crm", None),
            ("surface_not_allowed", "page", "evil-crm"),
        ]


@pytest.mark.parametrize("store", STORES)
def test_a_page_session_of_a_token_naming_no_client_or_an_allowed_one_decides(
    store: str, tmp_path: Path
) -> None:
    """A token that names no client is the page's own sign-in; an allowed client passes."""
    with serve(store, tmp_path, approval_surfaces=("page", "jdk8-crm")) as served:
        first, second = served.proposed(), served.proposed(order_id="ord_1002")
        sign_in_with_token(served, served.token(APPROVER))
        assert served.decide_on_page(first).status_code == 303
        sign_in_with_token(served, served.token(APPROVER, client="jdk8-crm"))
        assert served.decide_on_page(second).status_code == 303
        approved = [e.payload() for e in served.audit("decision.approved")]
        assert [(d["surface"], d.get("signed_in_client")) for d in approved] == [
            ("page", None),
            ("page", "jdk8-crm"),
        ]


def test_the_surface_names_of_signoff_are_reserved(tmp_path: Path) -> None:
    """`page`, `mcp` and `api` name signoff's own surfaces: no token's client may claim one."""
    with serve("sqlite", tmp_path) as served:
        for name in ("page", "mcp", "api"):
            response = served.client.get("/v1/inbox", headers=served.auth(APPROVER, client=name))
            assert_problem(response, 401, "not_authenticated")
