"""The confirmation pages: a trusted, non-agentic surface where a person approves what runs.

Served by ``signoff serve`` under ``/ui/`` (see ``docs/UI.md``). The pages act
as the same principals as the API and decide through the same
:class:`signoff.Gate`; they never show a confirmation token and never let a
parameter be edited.
"""

from signoff.web._identity import DEMO_USERS, DemoUser, LoginProvider, SignIn
from signoff.web._include import include_ui, install_ui

__all__ = ["DEMO_USERS", "DemoUser", "LoginProvider", "SignIn", "include_ui", "install_ui"]
