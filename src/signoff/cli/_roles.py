"""`signoff roles grant|revoke|list`: the role directory ``signoff serve`` consults.

An operator with access to the database manages it here (the first
``signoff_admin`` of a tenant is granted this way); admins then use
``/v1/roles``. Every change is an audit event in the tenant's chain.
"""

from __future__ import annotations

import getpass
from datetime import UTC

import click

from signoff._clock import from_micros
from signoff._paths import default_database_url, redacted
from signoff.cli._main import DB_HELP, open_existing_store
from signoff.cli._options import DATABASE
from signoff.exceptions import StoreError
from signoff.identity import StoreRoleDirectory
from signoff.store import Store
from signoff.store._migrations import SCHEMA_VERSION

_db = click.option(
    "--db", "url", type=DATABASE, envvar="SIGNOFF_DATABASE_URL", default=None, help=DB_HELP
)
_tenant = click.option("--tenant", required=True, help="The tenant (JWT tenant claim).")
_sub = click.option("--sub", "subject", required=True, help="The person (JWT sub).")
_role = click.option("--role", required=True, help="The role, e.g. refund_approver.")
_by = click.option(
    "--by", default=None, help="Who makes the change, for the audit (default: the OS user)."
)


@click.group()
def roles() -> None:
    """Grant, revoke and list roles in the directory `signoff serve` consults."""


@roles.command("grant")
@_db
@_tenant
@_sub
@_role
@_by
def grant(url: str | None, tenant: str, subject: str, role: str, by: str | None) -> None:
    """Grant ROLE to SUB in TENANT (audited)."""
    with _open(url) as store:
        changed = StoreRoleDirectory(store).grant(tenant, subject, role, by=_operator(by))
    click.echo(f"{'granted' if changed else 'already granted'}: {subject} {role} in {tenant}")


@roles.command("revoke")
@_db
@_tenant
@_sub
@_role
@_by
def revoke(url: str | None, tenant: str, subject: str, role: str, by: str | None) -> None:
    """Revoke ROLE from SUB in TENANT: their decisions and pending executions stop at once."""
    with _open(url) as store:
        changed = StoreRoleDirectory(store).revoke(tenant, subject, role, by=_operator(by))
    click.echo(f"{'revoked' if changed else 'already revoked'}: {subject} {role} in {tenant}")


@roles.command("list")
@_db
@_tenant
def list_roles(url: str | None, tenant: str) -> None:
    """Every role entry of TENANT, granted and revoked."""
    with _open(url) as store:
        entries = StoreRoleDirectory(store).grants(tenant)
    if not entries:
        click.echo(f"no role entries in {tenant}")
    for e in entries:
        when = from_micros(e.changed_at).astimezone(UTC).isoformat(timespec="seconds")
        status = "revoked" if e.revoked else "granted"
        click.echo(f"{e.subject}\t{e.role}\t{status}\tby {e.changed_by}\t{when}")


def _open(url: str | None) -> Store:
    url = url or default_database_url()
    store = open_existing_store(url)
    if store.schema_version() < SCHEMA_VERSION:
        store.close()
        shown = redacted(url)
        raise StoreError(
            f"the schema of {shown} is old — run `signoff db upgrade --db {shown}` first"
        )
    return store


def _operator(by: str | None) -> str:
    if by:
        return by
    try:
        return f"operator:{getpass.getuser()}"
    except (KeyError, OSError):
        return "operator"
