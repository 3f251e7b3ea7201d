"""`signoff tools` (what a model sees) and `signoff mcp` (the MCP server over stdio)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import click

from signoff.cli._options import DATABASE

if TYPE_CHECKING:
    from signoff.catalog._catalog import Catalog
    from signoff.http._settings import Settings
    from signoff.mcp_server import StaticIdentity

FORMATS = ("openai", "openai-responses", "mcp")
PUBLIC_URL_HELP = (
    "Where `signoff serve` answers, for confirmation links (env SIGNOFF_PUBLIC_URL; "
    "default http://SIGNOFF_HOST:SIGNOFF_PORT)."
)
CONFIG_HELP = "TOML file with a [signoff] table (flags > SIGNOFF_* env > this file)."
CATALOG_HELP = "Your tools: MODULE:FACTORY returning a signoff.Catalog (env SIGNOFF_CATALOG)."
DEMO_PRINCIPAL = "u_42@acme"


@click.command("tools")
@click.option("--demo", is_flag=True, default=None, help="The demo catalog (refund_order, …).")
@click.option("--catalog", default=None, metavar="MODULE:FACTORY", help=CATALOG_HELP)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="openai", show_default=True)
@click.option(
    "--config", envvar="SIGNOFF_CONFIG", type=click.Path(dir_okay=False), help=CONFIG_HELP
)
def tools(demo: bool | None, catalog: str | None, fmt: str, config: str | None) -> None:
    """Print the tool definitions a model sees, as JSON (--demo or --catalog)."""
    from signoff.agents import agent_tools, openai_tools

    with _catalog(_settings({"demo": demo, "catalog": catalog}, config)) as tool_catalog:
        specs = agent_tools(tool_catalog)
    if fmt == "mcp":
        from signoff.mcp_server import tool_definitions

        document: Any = {"tools": tool_definitions(specs)}
    else:
        document = openai_tools(specs, api="responses" if fmt == "openai-responses" else "chat")
    click.echo(json.dumps(document, indent=2, ensure_ascii=False))


@click.command("mcp")
@click.option(
    "--db", "database_url", type=DATABASE, default=None, help="Database URL or SQLite path."
)
@click.option(
    "--demo", is_flag=True, default=None, help="Demo shop and dev keys (as serve --demo)."
)
@click.option(
    "--principal",
    default=None,
    metavar="SUB@TENANT",
    help=f"The person the agent acts for; confirms in-band forms (demo: {DEMO_PRINCIPAL}).",
)
@click.option("--agent", default="agent:mcp", show_default=True, help="The agent's name (act).")
@click.option("--catalog", default=None, metavar="MODULE:FACTORY", help=CATALOG_HELP)
@click.option("--public-url", default=None, help=PUBLIC_URL_HELP)
@click.option(
    "--upstream",
    multiple=True,
    metavar="NAME=COMMAND|URL",
    help="An MCP server to stand in front of (as serve --upstream; docs/GATEWAY.md).",
)
@click.option(
    "--policy",
    "policy_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="The policy file (docs/POLICIES.md; [upstreams]: docs/GATEWAY.md). "
    "Env SIGNOFF_POLICY_FILE.",
)
@click.option(
    "--config", envvar="SIGNOFF_CONFIG", type=click.Path(dir_okay=False), help=CONFIG_HELP
)
def mcp_command(
    database_url: str | None,
    demo: bool | None,
    catalog: str | None,
    principal: str | None,
    agent: str,
    public_url: str | None,
    upstream: tuple[str, ...],
    policy_file: str | None,
    config: str | None,
) -> None:
    """Serve the MCP tools over stdio, acting for --principal."""
    from signoff._telemetry import configure_tracing
    from signoff.cli._seal import seal_from_environment
    from signoff.cli._serve import upstream_flags
    from signoff.gate._gate import Gate
    from signoff.mcp_server import create_mcp_server
    from signoff.store import open_store

    flags: dict[str, Any] = {
        "database_url": database_url,
        "demo": demo,
        "catalog": catalog,
        "policy_file": policy_file,
        "public_url": public_url,
    }
    flags["upstreams"] = upstream_flags(upstream, flags, config)
    settings = _settings(flags, config)
    identity = _identity(principal or (DEMO_PRINCIPAL if settings.demo else None), agent)
    configure_tracing(settings.tracing, os.environ)
    token_key = settings.effective_token_key()
    with _catalog(settings, persistent=True) as tools, ExitStack() as stack:
        store = seal_from_environment(open_store(settings.database_url))
        stack.callback(store.close)
        if settings.upstreams:
            from signoff.http._app import open_gateway

            tools = stack.enter_context(open_gateway(settings, store)).catalog(tools)
        from signoff.policy import PolicySource

        gate = Gate(
            tools,
            store,
            token_key=token_key,
            audience=settings.audience,
            policy=PolicySource(tools, settings.policy_file),
        )
        # The page lives on `signoff serve`: its public URL, else its host and port.
        public = settings.effective_public_url()
        server = create_mcp_server(gate, identity, public_url=public)
        # stdout carries the protocol from here on; diagnostics go to stderr.
        server.run("stdio")


def _settings(flags: dict[str, Any], config: str | None) -> Settings:
    from signoff.http._settings import load_settings

    return load_settings(flags, env=os.environ, config=config)


def _identity(principal: str | None, agent: str) -> StaticIdentity:
    from signoff.mcp_server import StaticIdentity

    if principal is None:
        raise click.UsageError("--principal SUB@TENANT is required outside --demo")
    subject, sep, tenant = principal.rpartition("@")
    if not sep or not subject or not tenant:
        raise click.BadParameter(
            f"expected SUB@TENANT, got {principal!r}", param_hint="--principal"
        )
    try:
        return StaticIdentity.for_person(subject, tenant, agent=agent)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--principal") from exc


@contextmanager
def _catalog(settings: Settings, *, persistent: bool = False) -> Iterator[Catalog]:
    """The demo catalog (shop next to the database, or a throwaway one) or the configured one."""
    from signoff.catalog._catalog import Catalog
    from signoff.demo import DemoShop, demo_catalog
    from signoff.http._catalog import load_catalog, open_demo
    from signoff.http._settings import SettingsError

    if not settings.demo:
        if settings.catalog is None and settings.upstreams:
            yield Catalog()
            return
        if settings.catalog is None:
            raise SettingsError(
                "no tools named — pass --demo for the demo catalog, --catalog MODULE:FACTORY "
                "(env SIGNOFF_CATALOG) for yours, or --upstream NAME=… for an MCP server's"
            )
        yield load_catalog(settings)
        return
    if persistent:
        demo = open_demo(settings)
        try:
            yield demo_catalog(demo.shop, demo.provider)
        finally:
            demo.shop.close()
        return
    with tempfile.TemporaryDirectory(prefix="signoff-tools-") as scratch:
        shop = DemoShop(os.path.join(scratch, "shop.sqlite"))
        try:
            yield demo_catalog(shop)
        finally:
            shop.close()
