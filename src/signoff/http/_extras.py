"""Where other edges attach to the HTTP app without touching its internals.

An extension is a function ``include(app: FastAPI, state: AppState) -> None``
that adds routers or mounts (``app.include_router(...)``, ``app.mount(...)``)
and, when it needs a running context (an MCP session manager), registers it
with ``state.add_lifespan(factory)``. To ship one with ``signoff serve``, add
ONE line to ``EXTRAS`` below naming it as ``"package.module:function"``.
Tests pass ``create_app(..., extras=[...])`` instead.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fastapi import FastAPI

from signoff.http._state import AppState

Extra = Callable[[FastAPI, AppState], None]

EXTRAS: tuple[str, ...] = (
    "signoff.web:include_ui",  # issue 5: confirmation pages under /ui/
    "signoff.mcp_server:include_mcp",  # issue 6: MCP streamable HTTP at /mcp
    "signoff.channels:include_channels",  # issue 25: Slack (SIGNOFF_CHANNELS_CONFIG)
)


def default_extras() -> list[Extra]:
    """The extensions named in EXTRAS, imported."""
    return [_load(spec) for spec in EXTRAS]


def _load(spec: str) -> Extra:
    module_name, _, attribute = spec.partition(":")
    extra = getattr(importlib.import_module(module_name), attribute)
    if not callable(extra):
        raise TypeError(f"{spec} is not callable")
    return extra  # type: ignore[no-any-return]
