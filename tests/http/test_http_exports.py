"""The deliberate public surface of signoff.http and signoff.client."""

from __future__ import annotations

import signoff.client
import signoff.http

HTTP_API = {
    "PROBLEM_MEDIA_TYPE",
    "AppState",
    "Authenticator",
    "Caller",
    "DemoObjects",
    "Extra",
    "IdempotencyKey",
    "Problem",
    "PublicKey",
    "Settings",
    "SettingsError",
    "State",
    "VerificationKey",
    "app_state",
    "create_app",
    "current_principal",
    "demo_shop_path",
    "error_problem",
    "load_settings",
    "mint_dev_token",
    "open_demo",
    "problem",
    "state_of",
}


def test_http_all_is_pinned_and_sorted() -> None:
    """Adding or removing a public name of signoff.http is a deliberate change."""
    assert set(signoff.http.__all__) == HTTP_API
    assert signoff.http.__all__ == sorted(signoff.http.__all__, key=lambda n: (not n.isupper(), n))
    assert all(hasattr(signoff.http, name) for name in HTTP_API)


def test_client_all_is_pinned() -> None:
    """The client exports the client class, the decision key and the problem-to-error mapping."""
    assert signoff.client.__all__ == [
        "SignoffClient",
        "confirmation_idempotency_key",
        "error_from_problem",
    ]
