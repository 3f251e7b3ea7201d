"""Attach the chat channels to ``signoff serve``: their signed endpoints and their notifier.

``SIGNOFF_CHANNELS_CONFIG`` names the TOML file (docs/INTEGRATIONS.md). The
channels' notifier runs in every worker (its deliveries are leased, so two
workers never post one event twice at once) and follows the audit chain like
``signoff notify`` does.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from signoff.channels._config import ChannelsConfig, config_from_environment
from signoff.channels._links import IdentityLinks
from signoff.exceptions import MissingExtra
from signoff.http._resource import public_url_of
from signoff.http._state import AppState
from signoff.notify import Channel, Notifier

if TYPE_CHECKING:
    from signoff.channels._push import WebPush
    from signoff.channels._slack import Slack
    from signoff.channels._teams import Teams


@dataclass(slots=True)
class Channels:
    """What the extension built, on ``app.state.signoff_channels`` (tests drive it)."""

    links: IdentityLinks
    notifier: Notifier
    slack: Slack | None = None
    teams: Teams | None = None
    push: WebPush | None = None
    destinations: list[Channel] = field(default_factory=list)


def include_channels(app: FastAPI, state: AppState) -> None:
    """The ``EXTRAS`` entry: nothing unless ``SIGNOFF_CHANNELS_CONFIG`` names a file."""
    config = config_from_environment()
    if config is not None:
        install_channels(app, state, config)


def install_channels(
    app: FastAPI,
    state: AppState,
    config: ChannelsConfig,
    *,
    env: Mapping[str, str] | None = None,
    run_notifier: bool = True,
    teams_credentials: Any = None,
) -> Channels:
    """Build the configured channels; ``teams_credentials`` replaces the Entra ID token
    source (a ``ServiceClientCredentialsFactory``; tests use a stand-in)."""
    env = os.environ if env is None else env
    gate = state.gate
    public_url = public_url_of(state.settings)
    days = config.slack.link_days if config.slack is not None else 30.0
    links = IdentityLinks(gate.store, gate.clock, link_ttl=timedelta(days=days))
    app.state.signoff_links = links
    destinations: list[Channel] = []
    slack = None
    router = APIRouter(include_in_schema=False)
    if config.slack is not None:
        slack_module = _extra("signoff.channels._slack", "slack")
        slack = slack_module.Slack(gate, links, config.slack, public_url=public_url, env=env)
        destinations.append(
            slack_module.SlackChannel(slack, max_attempts=config.slack.max_attempts)
        )
        router.add_api_route("/slack/events", _slack_route(slack), methods=["POST"])
    teams = None
    if config.teams is not None:
        teams_module = _extra("signoff.channels._teams", "teams")
        teams = teams_module.Teams(
            gate,
            links,
            config.teams,
            public_url=public_url,
            env=env,
            credentials=teams_credentials,
        )
        destinations.append(
            teams_module.TeamsChannel(teams, max_attempts=config.teams.max_attempts)
        )
        router.add_api_route("/teams/messages", _teams_route(teams), methods=["POST"])
    push = None
    if config.webpush is not None:
        push_module = _extra("signoff.channels._push", "webpush")
        push = push_module.WebPush(gate, config.webpush, public_url=public_url, env=env)
        destinations.append(push_module.PushChannel(push))
        app.state.signoff_push = push  # the page's /ui/notifications subscribes with its key
    app.include_router(router)
    notifier = Notifier(gate.store, destinations, public_url=public_url, clock=gate.clock)
    built = Channels(links, notifier, slack, teams, push, destinations)
    app.state.signoff_channels = built
    if run_notifier and destinations:
        state.add_lifespan(partial(_notifying, notifier, config.interval_seconds))
    state.closers.append(notifier.close)
    return built


def _extra(module: str, extra: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"the channels configuration uses {extra}: pip install 'signoff[{extra}]'"
        ) from exc


def _slack_route(slack: Slack) -> Callable[[Request], Awaitable[Response]]:
    async def slack_events(request: Request) -> Response:
        body = await request.body()
        answer = await run_in_threadpool(slack.handle, body, dict(request.headers))
        return Response(
            status_code=answer.status,
            content=answer.body,
            headers=answer.first_headers_without_set_cookie(),
        )

    return slack_events


def _teams_route(teams: Teams) -> Callable[[Request], Awaitable[Response]]:
    async def teams_messages(request: Request) -> Response:
        body = await request.body()
        answer = await teams.handle(body, request.headers.get("authorization"))
        if answer is None:
            return Response(status_code=200)
        return JSONResponse(answer.body, status_code=answer.status)

    return teams_messages


@asynccontextmanager
async def _notifying(notifier: Notifier, interval: float) -> AsyncIterator[None]:
    notifier.start(interval=interval)
    try:
        yield
    finally:
        notifier.stop()
