"""`signoff policy check|diff|apply FILE`: who approves what, as a reviewed file.

``check`` validates the file against the catalog ``signoff serve`` would load
(``--catalog`` / ``SIGNOFF_CATALOG``, or ``--demo``), one line per problem;
``diff`` shows what it changes against the version in force and, per pending
proposal, what the same request would need under it; ``apply`` records it as
the version in force, audited in every tenant's chain (docs/POLICIES.md).
"""

from __future__ import annotations

import getpass
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from signoff._clock import to_micros
from signoff._paths import default_database_url
from signoff.catalog._catalog import Catalog
from signoff.cli._errors import DASH, EXIT_ERROR
from signoff.cli._main import DB_HELP, open_existing_store
from signoff.policy import (
    DEFAULT_SECTIONS,
    PolicyFile,
    Problem,
    check_policy,
    document_changes,
    pending_changes,
)
from signoff.policy._file import parse_with_problems

_db = click.option("--db", "url", envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP)
_catalog = click.option(
    "--catalog", default=None, metavar="MODULE:FACTORY", help="Your tools (env SIGNOFF_CATALOG)."
)
_demo = click.option("--demo", is_flag=True, default=None, help="Check against the demo tools.")
_file = click.argument("file", type=click.Path(dir_okay=False))
HINTS = {
    "policy_syntax": "fix the TOML",
    "policy_unreadable": "check the path",
    "unknown_section": "use [defaults], [tools.NAME], [tenants.NAME] or [upstreams.NAME]",
    "unknown_field": "fix the spelling or remove it",
    "unknown_tool": "name a tool of the catalog (`signoff tools`)",
    "unknown_threshold": "set only the thresholds the tool declares",
    "invalid_value": "see docs/POLICIES.md for what the key accepts",
    "cedar_invalid": "fix the Cedar condition (docs/POLICIES.md, Cedar)",
    "invalid_upstreams": "see docs/GATEWAY.md for the [upstreams] tables",
}


@click.group()
def policy() -> None:
    """Check, diff and apply the policy file (who approves what; docs/POLICIES.md)."""


@policy.command("check")
@_file
@_catalog
@_demo
def check(file: str, catalog: str | None, demo: bool | None) -> None:
    """Validate FILE against the catalog; one line per problem, exit 2 if any."""
    checked = _checked(file, catalog, demo)
    tools = len(checked.tool_names())
    tenants = len(checked.tenant_defaults)
    click.echo(
        f"policy {file} is valid: {tools} tools, {tenants} tenants, version {checked.digest}"
    )


@policy.command("diff")
@_file
@_db
@_catalog
@_demo
def diff(file: str, url: str | None, catalog: str | None, demo: bool | None) -> None:
    """What FILE changes against the version in force, and for each pending proposal."""
    from signoff.gate._policy_apply import current_policy_version

    with _catalog_for(catalog, demo) as tools:
        new = _checked(file, catalog, demo, tools=tools)
        with open_existing_store(url or default_database_url()) as store:
            current = current_policy_version(store)
            with store.read() as tx:
                pending = tx.awaiting_proposals()
            changes = pending_changes(new, tools, pending)
    before = current.document if current else {}
    label = "no policy file" if current is None else f"version {current.digest[:12]}"
    lines = document_changes(before, dict(new.document))
    click.echo(f"settings against {label}: {len(lines)} changed")
    for line in lines:
        click.echo(f"  {line}")
    affected = [c for c in changes if c.changes or c.error]
    click.echo(
        f"pending proposals: {len(changes)}, {len(affected)} would be asked differently "
        "(each keeps the policy it was proposed under)"
    )
    for change in changes:
        where = f"{change.proposal_id} ({change.tenant}, {change.tool})"
        if change.error:
            click.echo(f"  {where}: cannot evaluate: {change.error}")
        elif not change.changes:
            click.echo(f"  {where}: unchanged")
        else:
            click.echo(f"  {where}: " + "; ".join(change.changes))


@policy.command("apply")
@_file
@_db
@_catalog
@_demo
@click.option("--by", default=None, help="Who applies it, for the audit (default: the OS user).")
def apply(
    file: str, url: str | None, catalog: str | None, demo: bool | None, by: str | None
) -> None:
    """Record FILE as the policy version in force (audited in every tenant's chain)."""
    from signoff.gate._policy_apply import apply_policy

    checked = _checked(file, catalog, demo)
    with open_existing_store(url or default_database_url()) as store:
        now = to_micros(datetime.now(UTC))
        record = apply_policy(store, checked, applied_by=by or f"cli:{getpass.getuser()}", now=now)
    if record is None:
        click.echo(f"policy version {checked.digest} is already in force")
        return
    click.echo(
        f"applied policy version {checked.digest}; reload `signoff serve` (SIGHUP) to use it"
    )


def _upstreams(section: Mapping[str, Any]) -> list[Problem]:
    """``[upstreams]`` checked by the MCP gateway's own parser (docs/GATEWAY.md)."""
    from signoff.exceptions import InvalidGatewayPolicy
    from signoff.gateway._policy import parse_gateway_policy

    try:
        parse_gateway_policy({"upstreams": dict(section)})
    except InvalidGatewayPolicy as exc:
        return [Problem("invalid_upstreams", "upstreams", exc.message)]
    return []


SECTIONS = {**DEFAULT_SECTIONS, "upstreams": _upstreams}


def _checked(
    file: str, catalog: str | None, demo: bool | None, *, tools: Catalog | None = None
) -> PolicyFile:
    try:
        text = Path(file).read_text(encoding="utf-8")
    except OSError as exc:
        _fail([Problem("policy_unreadable", file, exc.strerror or str(exc))])
    parsed, problems = parse_with_problems(text, source=file)
    if parsed is not None:
        if tools is None:
            with _catalog_for(catalog, demo) as loaded:
                problems += check_policy(parsed, loaded, sections=SECTIONS)
        else:
            problems += check_policy(parsed, tools, sections=SECTIONS)
    if problems or parsed is None:
        _fail(problems)
    assert parsed is not None
    return parsed


def _fail(problems: list[Problem]) -> None:
    for problem in problems:
        click.echo(
            f"{problem.line()}{DASH}{HINTS.get(problem.code, 'see docs/POLICIES.md')}", err=True
        )
    sys.exit(EXIT_ERROR)


@contextmanager
def _catalog_for(reference: str | None, demo: bool | None) -> Iterator[Catalog]:
    """The catalog ``signoff serve`` would load with the same flags and environment."""
    from signoff.cli._serve import _settings
    from signoff.http._catalog import load_catalog

    settings = _settings(
        {"catalog": reference, "demo": demo}, os.environ.get("SIGNOFF_CONFIG"), check=False
    )
    if not settings.demo:
        yield load_catalog(settings)
        return
    from signoff.demo import DemoShop, demo_catalog

    with tempfile.TemporaryDirectory(prefix="signoff-policy-") as folder:
        shop = DemoShop(str(Path(folder) / "shop.db"))
        try:
            yield demo_catalog(shop)
        finally:
            shop.close()
