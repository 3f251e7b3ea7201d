"""The HTTP API of ``signoff serve``: FastAPI, bearer JWT identity, problem+json errors."""

# Imported on first use (PEP 562, as in ``signoff/__init__.py``): the CLI reads settings
# and mints development tokens without importing FastAPI, the MCP SDK or Authlib.
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from signoff.http._app import create_app
    from signoff.http._catalog import demo_shop_path, open_demo
    from signoff.http._deps import Caller, IdempotencyKey, State, app_state, current_principal
    from signoff.http._extras import Extra
    from signoff.http._problems import PROBLEM_MEDIA_TYPE, Problem, error_problem, problem
    from signoff.http._settings import Settings, SettingsError, load_settings
    from signoff.http._state import AppState, DemoObjects, state_of
    from signoff.identity import Authenticator, PublicKey, VerificationKey, mint_dev_token

__all__ = [
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
]


def __getattr__(name: str) -> object:
    """Import a public name on first use, from the module its line above names."""
    from signoff._lazy import resolve

    return resolve(__name__, __file__, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
