"""`signoff serve` (the HTTP API under uvicorn) and `signoff dev-token` (development JWTs)."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from signoff.cli._options import DATABASE
from signoff.cli._settings_help import settings_epilog
from signoff.http._settings import ENV_PREFIX, Settings, SettingsError, load_settings

CONFIG_HELP = "TOML file with a [signoff] table (flags > SIGNOFF_* env > this file)."
MAX_TTL_SECONDS = 7 * 24 * 3600


@click.command(epilog=settings_epilog())
@click.option(
    "--db", "database_url", type=DATABASE, default=None, help="Database URL or SQLite path."
)
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port to bind (default 8000).")
@click.option("--workers", type=int, default=None, help="Worker processes (default 1).")
@click.option("--demo", is_flag=True, default=None, help="Demo shop, seeded data, dev keys.")
@click.option(
    "--catalog", default=None, metavar="MODULE:FACTORY", help="Your tools (a signoff.Catalog)."
)
@click.option(
    "--config",
    "config",
    envvar="SIGNOFF_CONFIG",
    type=click.Path(dir_okay=False),
    default=None,
    help=CONFIG_HELP + " Env SIGNOFF_CONFIG.",
)
@click.option("--log-level", default=None, help="critical|error|warning|info|debug")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default=None,
    help="text (default) or json: one object per line with the request id.",
)
@click.option(
    "--public-url",
    default=None,
    help="Where people reach this server, for confirmation links (e.g. behind a proxy).",
)
@click.option(
    "--reconcile-interval",
    "reconcile_interval_seconds",
    type=click.IntRange(0),
    default=None,
    help="Seconds between reconcile passes in each worker (default 10; 0 turns it off).",
)
@click.option(
    "--upstream",
    multiple=True,
    metavar="NAME=COMMAND|URL",
    help="An MCP server to stand in front of: NAME='COMMAND …' (stdio) or NAME=https://…/mcp; "
    "repeat for several (docs/GATEWAY.md).",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="The policy file (docs/POLICIES.md; [upstreams]: docs/GATEWAY.md); SIGHUP reloads it. "
    "Env SIGNOFF_POLICY_FILE.",
)
def serve(config: str | None, upstream: tuple[str, ...], **flags: Any) -> None:
    """Serve the HTTP API (OpenAPI at /openapi.json, docs at /docs)."""
    import uvicorn

    from signoff._logging import logging_config
    from signoff._telemetry import check_tracing
    from signoff.cli._checks import check_port_free

    flags["upstreams"] = upstream_flags(upstream, flags, config)
    if flags.get("policy_file") is not None:
        flags["policy_file"] = str(Path(flags["policy_file"]).resolve())
    settings = _settings(flags, config)
    check_tracing(settings.tracing, os.environ)  # before the workers start, in one line
    _prepare(settings)
    check_port_free(settings.host, settings.port)
    # Workers are separate processes: hand them the same settings through the environment.
    for name, value in flags.items():
        if value is not None:
            os.environ[ENV_PREFIX + name.upper()] = str(value)
    if config is not None:
        os.environ["SIGNOFF_CONFIG"] = str(Path(config).resolve())
    if settings.demo and settings.signing_keyset() is None:
        from signoff.http._signing import demo_keys_file

        # Demo mode signs with a development key file kept beside its database (the signer
        # state beside it), made now if missing and named to every worker like the settings.
        os.environ[ENV_PREFIX + "SIGNING_KEYS_FILE"] = str(demo_keys_file(settings.database_url))
    _start_banner(settings)
    from signoff.http._server_protocol import DeadlineH11Protocol

    with _worker_metrics(settings.workers):
        uvicorn.run(
            "signoff.http._app:app_from_environment",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level=settings.log_level,
            log_config=logging_config(settings.log_level, settings.log_format),
            access_log=False,  # signoff logs each request itself, with its request id
            server_header=False,
            # uvicorn's h11 protocol plus a deadline for each request head (slow headers).
            # The class itself: uvicorn before 0.32 reads a string only as a protocol name.
            http=DeadlineH11Protocol,
        )


def upstream_flags(given: tuple[str, ...], flags: dict[str, Any], config: str | None) -> str | None:
    """``--upstream`` values over the configured upstreams, as the ``SIGNOFF_UPSTREAMS`` JSON."""
    if not given:
        return None
    from signoff.gateway import merge_upstreams, parse_upstream, upstreams_json

    configured = load_settings(
        {k: v for k, v in flags.items() if k != "upstreams"}, env=os.environ, config=config
    ).upstreams
    return upstreams_json(merge_upstreams(configured, [parse_upstream(v) for v in given]))


@contextmanager
def _worker_metrics(workers: int) -> Iterator[None]:
    """Several workers count into one place (prometheus_client multiprocess mode).

    A fresh directory per run, removed at exit, unless PROMETHEUS_MULTIPROC_DIR is set
    (then it is yours, and it must be empty when the server starts).
    """
    if workers < 2 or os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        yield
        return
    directory = tempfile.mkdtemp(prefix="signoff-metrics-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    try:
        yield
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@click.command("dev-token")
@click.option("--sub", "subject", required=True, help="The person (JWT sub).")
@click.option("--tenant", required=True, help="The tenant (JWT tenant).")
@click.option("--role", "roles", multiple=True, help="A role; repeat for several.")
@click.option("--act", "actor", default=None, help="The agent acting for --sub (JWT act.sub).")
@click.option("--client", default=None, help="The client system the token is issued to (JWT azp).")
@click.option("--ttl", type=click.IntRange(1, MAX_TTL_SECONDS), default=3600, show_default=True)
@click.option("--demo", is_flag=True, default=None, help="Use the demo server's development key.")
@click.option("--config", "config", type=click.Path(dir_okay=False), default=None, help=CONFIG_HELP)
def dev_token(
    subject: str,
    tenant: str,
    roles: tuple[str, ...],
    actor: str | None,
    client: str | None,
    ttl: int,
    demo: bool | None,
    config: str | None,
) -> None:
    """Print a JWT signed with the development key; refused outside demo/development mode."""
    from signoff.identity import mint_dev_token

    settings = _settings({"demo": demo}, config, check=False)
    if not settings.development:
        raise SettingsError(
            "dev-token refuses outside demo or development mode — use --demo, or "
            "SIGNOFF_ENVIRONMENT=development with SIGNOFF_JWT_HS256_SECRET"
        )
    token = mint_dev_token(
        settings,
        subject=subject,
        tenant=tenant,
        roles=roles,
        actor=actor,
        client=client,
        ttl_seconds=ttl,
        now=datetime.now(UTC),
    )
    click.echo(token)


def _settings(flags: dict[str, Any], config: str | None, *, check: bool = True) -> Settings:
    settings = load_settings(flags, env=os.environ, config=config)
    return settings.check() if check else settings


def _prepare(settings: Settings) -> None:
    """Keys, catalog, migrations, a write to the store (and the demo shop), before any worker."""
    from signoff.cli._checks import check_writable
    from signoff.http._app import open_gateway
    from signoff.http._catalog import native_catalog, open_demo
    from signoff.identity import Authenticator
    from signoff.store import open_store

    Authenticator.from_settings(settings)
    catalog = None if settings.demo else native_catalog(settings)
    with open_store(settings.database_url) as store:
        check_writable(store, settings.database_url)
    if settings.demo:
        open_demo(settings).shop.close()
    if settings.upstreams:
        # Reach every upstream once now, so a wrong command is one line, not a worker's crash.
        with open_gateway(settings, None) as gateway:
            _gateway_banner(settings, gateway)
            if settings.policy_file is not None:
                _check_policy(settings, catalog, gateway=gateway)
    elif settings.policy_file is not None:
        _check_policy(settings, catalog)


def _check_policy(settings: Settings, catalog: Any, *, gateway: Any = None) -> None:
    """Refuse to start on a policy file with problems (every worker would refuse it too),
    checked against the catalog the workers will serve (upstream tools included)."""
    from signoff.demo import DemoShop, demo_catalog
    from signoff.policy import PolicySource

    assert settings.policy_file is not None
    with tempfile.TemporaryDirectory(prefix="signoff-policy-") as folder:
        shop = DemoShop(str(Path(folder) / "shop.db")) if catalog is None else None
        try:
            tools = demo_catalog(shop) if shop is not None else catalog
            PolicySource(tools if gateway is None else gateway.catalog(tools), settings.policy_file)
        finally:
            if shop is not None:
                shop.close()


def _start_banner(settings: Settings) -> None:
    from signoff._paths import redacted

    click.echo(f"signoff: store {redacted(settings.database_url)}", err=True)
    if settings.demo:
        _demo_banner(settings)
    sys.stderr.flush()


def _gateway_banner(settings: Settings, gateway: Any) -> None:
    from signoff.gateway._policy import default_approver

    for spec in gateway.specs:
        writes = [t for t in gateway.writes if t.upstream == spec.name]
        reads = [t for t in gateway.reads if t.upstream == spec.name]
        skipped = [t for t in gateway.skipped if t.upstream == spec.name]
        roles = sorted({t.policy.approver_role or default_approver(spec.name) for t in writes})
        click.echo(
            f"signoff: upstream {spec.name} ({spec.describe()}): {len(writes)} write(s) need "
            f"confirmation (approver role {', '.join(roles) or '—'}), {len(reads)} read(s) pass "
            f"through, {len(skipped)} not exposed",
            err=True,
        )
    if settings.demo and gateway.writes:
        role = gateway.writes[0].policy.approver_role or default_approver(
            gateway.writes[0].upstream
        )
        click.echo(
            "  upstream approver token: signoff dev-token --demo --sub alice --tenant acme "
            f"--role {role}",
            err=True,
        )


def _demo_banner(settings: Settings) -> None:
    base = f"http://{settings.host}:{settings.port}"
    click.echo(
        f"signoff demo on {base} (docs: {base}/docs). Development keys: never expose this.\n"
        "  agent token:    signoff dev-token --demo --sub u_42 --tenant acme "
        "--act agent:support-bot\n"
        "  approver token: signoff dev-token --demo --sub alice --tenant acme "
        "--role refund_approver\n"
        f"  confirmation page: {base}/ui/ (sign in as a demo user)",
        err=True,
    )
