"""``create_app``: the FastAPI application of ``signoff serve``.

Request path: middleware (metrics, problem safety net, body limit) → bearer
JWT → router → :class:`~signoff.Gate` → view. Errors from anywhere become
problem+json in ``_problems``. Extensions attach through ``_extras``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from functools import partial

from fastapi import FastAPI

from signoff import __version__
from signoff.demo import demo_catalog
from signoff.gate._followup_loop import FollowupLoop
from signoff.gate._gate import Gate
from signoff.gate._reconciler import ReconcileLoop
from signoff.gateway import Gateway, load_gateway_policy
from signoff.http import (
    _audit,
    _decisions,
    _delegations,
    _deliveries,
    _demo,
    _executions,
    _inbox,
    _jwks,
    _mandates,
    _proposals,
    _roles,
    _system,
    _well_known,
)
from signoff.http._body import RequestText
from signoff.http._catalog import demo_shop_path as demo_shop_path  # also importable here
from signoff.http._catalog import load_catalog as load_catalog
from signoff.http._catalog import native_catalog, open_demo
from signoff.http._docs_assets import install_docs
from signoff.http._extras import Extra, default_extras
from signoff.http._limits import BodyLimit
from signoff.http._methods import HeadAsGet
from signoff.http._metrics import Metrics, MetricsMiddleware
from signoff.http._openapi import install_openapi
from signoff.http._policy_reload import record_in_force, reloading_on_sighup
from signoff.http._problems import install_problem_handlers
from signoff.http._rate_limit import ProposalRateLimit
from signoff.http._request_log import RequestContext
from signoff.http._resource import public_url_of
from signoff.http._server_protocol import DeadlineH11Protocol
from signoff.http._settings import Settings
from signoff.http._signing import checkpointing, gate_proof
from signoff.http._state import AppState, DemoObjects, LifespanFactory, state_of
from signoff.identity import Authenticator, CibaClient, StoreRoleDirectory
from signoff.policy import PolicySource
from signoff.store import Store, open_store

DESCRIPTION = """\
AI agents propose write operations; an entitled person confirms exactly that
operation; the confirmed operation runs once. Every call carries a bearer JWT
(`sub`, `tenant`, `roles`, and `act` when an agent acts for `sub`). Errors are
RFC 9457 `application/problem+json` with a stable `code`.
"""


def create_app(
    settings: Settings,
    *,
    gate: Gate | None = None,
    demo: DemoObjects | None = None,
    authenticator: Authenticator | None = None,
    extras: Sequence[Extra] | None = None,
) -> FastAPI:
    """Build the app; pass ``gate`` (and ``demo``) to serve objects you own, e.g. in tests.

    ``extras`` defaults to the extensions listed in ``signoff.http._extras``.
    """
    state = _build_state(settings, gate=gate, demo=demo, authenticator=authenticator)
    app = FastAPI(
        title="signoff",
        version=__version__,
        description=DESCRIPTION,
        lifespan=_lifespan,
        docs_url=None,  # served from local assets by install_docs, never a CDN
        redoc_url=None,
        # One server span per request, signoff's own (http/_request_log.py): FastAPI's would
        # record the query string (where tokens travel) and, in its logs, the input of a
        # failed validation. Metrics stay on the Prometheus endpoint.
        telemetry={"tracing": False, "metrics": False, "logs": False, "operation_spans": False},
    )
    app.state.signoff = state
    state.rate_limit = ProposalRateLimit(
        settings.proposal_rate_limit, storage=settings.rate_limit_storage
    )
    app.add_middleware(HeadAsGet)
    install_problem_handlers(app)
    app.add_middleware(RequestText)  # inside the body limit: reads at most max_body_bytes
    app.add_middleware(
        BodyLimit,
        max_bytes=settings.max_body_bytes,
        read_seconds=settings.request_read_seconds,
    )
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    app.add_middleware(RequestContext)
    for module in (
        _system,
        _proposals,
        _decisions,
        _mandates,
        _inbox,
        _executions,
        _roles,
        _delegations,
        _audit,
        _deliveries,
        _well_known,
        _jwks,
    ):
        app.include_router(module.router)
    if state.demo is not None:
        app.include_router(_demo.router)
    for extra in default_extras() if extras is None else extras:
        extra(app, state)
    install_openapi(app, server_url=public_url_of(settings))
    install_docs(app)
    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state = state_of(app)
    try:
        async with AsyncExitStack() as stack:
            for factory in state.lifespans:
                await stack.enter_async_context(factory())
            yield
    finally:
        state.close()


def _build_state(
    settings: Settings,
    *,
    gate: Gate | None,
    demo: DemoObjects | None,
    authenticator: Authenticator | None,
) -> AppState:
    closers: list[Callable[[], None]] = []
    lifespans: list[LifespanFactory] = []
    metrics = Metrics()
    try:
        if gate is None:
            settings.check()
            store = open_store(settings.database_url)
            closers.append(store.close)
            if settings.demo and demo is None:
                demo = open_demo(settings)
                closers.append(demo.shop.close)
            catalog = demo_catalog(demo.shop, demo.provider) if demo else native_catalog(settings)
            if settings.upstreams:
                gateway = open_gateway(settings, store)
                closers.append(gateway.close)
                catalog = gateway.catalog(catalog)
            # One policy file: [upstreams] for the gateway, the rest for every tool.
            policies = PolicySource(catalog, settings.policy_file)
            gate = Gate(
                catalog,
                store,
                token_key=settings.effective_token_key(),
                audience=settings.audience,
                proof=gate_proof(settings, on_refusal=metrics.signer_refused),
                directory=role_directory(settings, store),
                surfaces=settings.effective_surfaces(),
                policy=policies,
                backchannel=backchannel(settings, closers),
            )
            if settings.policy_file is not None:
                record_in_force(gate, policies, by="signoff serve")
                lifespans.append(partial(reloading_on_sighup, gate, policies))
            lifespans.append(partial(_reconciling, gate, settings))
            lifespans.append(partial(_following_up, gate, settings))
            lifespans.append(partial(checkpointing, gate))
        authenticator = authenticator or Authenticator.from_settings(settings)
    except BaseException:
        for close in reversed(closers):
            close()
        raise
    return AppState(
        settings, gate, authenticator, metrics, demo, lifespans=lifespans, closers=closers
    )


def backchannel(settings: Settings, closers: list[Callable[[], None]]) -> CibaClient | None:
    """signoff's CIBA client at the provider approvals under ``evidence: idp`` go through."""
    if settings.ciba_issuer is None:
        return None
    client = CibaClient.discover(
        settings.ciba_issuer,
        client_id=str(settings.ciba_client_id),
        client_secret=str(settings.ciba_client_secret),
    )
    closers.append(client.close)
    return client


def role_directory(settings: Settings, store: Store) -> StoreRoleDirectory | None:
    """The directory every surface consults (PROTOCOL rule 11), unless turned off."""
    mode = settings.effective_role_directory()
    if mode == "off":
        return None
    return StoreRoleDirectory(store, mode="revocations" if mode == "revocations" else "grants")


@asynccontextmanager
async def _reconciling(gate: Gate, settings: Settings) -> AsyncIterator[None]:
    """Each worker settles stuck executions in the background (claims are single-winner)."""
    if settings.reconcile_interval_seconds == 0:
        yield
        return
    loop = ReconcileLoop(
        gate,
        interval=timedelta(seconds=settings.reconcile_interval_seconds),
        older_than=timedelta(seconds=settings.reconcile_older_than_seconds),
    )
    loop.start()
    try:
        yield
    finally:
        loop.stop()


@asynccontextmanager
async def _following_up(gate: Gate, settings: Settings) -> AsyncIterator[None]:
    """Each worker takes due reminders, escalations and expiries (each step single-winner)."""
    if settings.followup_interval_seconds == 0:
        yield
        return
    loop = FollowupLoop(gate, interval=timedelta(seconds=settings.followup_interval_seconds))
    loop.start()
    try:
        yield
    finally:
        loop.stop()


def open_gateway(settings: Settings, store: Store | None) -> Gateway:
    """Connect to the configured upstream MCP servers (docs/GATEWAY.md); all or no start."""
    policy = load_gateway_policy(settings.policy_file)
    return Gateway(settings.upstreams, policy, store=store).start()


CONFIG_ENV = "SIGNOFF_CONFIG"


def app_from_environment() -> FastAPI:
    """The uvicorn factory of ``signoff serve``: ``SIGNOFF_*`` env over ``SIGNOFF_CONFIG``.

    ``signoff serve`` writes its flags into the environment before uvicorn starts
    the workers, so every worker builds the same app from the same settings.
    """
    import os

    from signoff._logging import configure_logging
    from signoff._telemetry import configure_tracing
    from signoff.http._settings import load_settings

    settings = load_settings(env=os.environ, config=os.environ.get(CONFIG_ENV))
    configure_logging(settings.log_level, settings.log_format)
    configure_tracing(settings.tracing, os.environ)  # this worker's spans, if any are wanted
    # This worker's connections: a request head gets the same deadline as its body.
    DeadlineH11Protocol.read_seconds = float(settings.request_read_seconds)
    return create_app(settings)
