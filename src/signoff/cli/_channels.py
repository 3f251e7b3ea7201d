"""`signoff channels link|unlink|links`: an admin's directory entry for a chat user.

The other way to link is the chat user's own: click a button, follow the
one-time link and sign in on the page. Display names are never used.
"""

from __future__ import annotations

from datetime import UTC

import click

from signoff._clock import SystemClock, from_micros
from signoff._model import CHAT_SURFACES, Principal
from signoff.channels import IdentityLinks
from signoff.cli._roles import _by, _db, _open, _operator, _sub, _tenant

_channel = click.argument("channel", type=click.Choice(sorted(CHAT_SURFACES)))
_workspace = click.option(
    "--workspace", required=True, help="Slack team id (T…), or the Teams tenant id."
)
_user = click.option("--user", "user_id", required=True, help="The chat user id (Slack U…).")


@click.group()
def channels() -> None:
    """Link chat users (Slack, Teams) to signoff people; list and remove links."""


@channels.command("link")
@_channel
@_workspace
@_user
@_db
@_tenant
@_sub
@click.option("--role", "roles", multiple=True, help="A role the person decides with (repeat).")
@_by
def link(
    channel: str,
    workspace: str,
    user_id: str,
    url: str | None,
    tenant: str,
    subject: str,
    roles: tuple[str, ...],
    by: str | None,
) -> None:
    """Link the chat user to SUB in TENANT, deciding with the ROLEs (audited)."""
    with _open(url) as store:
        person = Principal(subject, tenant, roles=frozenset(roles))
        IdentityLinks(store, SystemClock()).link(
            channel, workspace, user_id, person, by=_operator(by)
        )
    shown = ", ".join(sorted(roles)) or "no role"
    click.echo(f"linked: {channel} {workspace}/{user_id} → {subject} in {tenant} ({shown})")


@channels.command("unlink")
@_channel
@_workspace
@_user
@_db
@_by
def unlink(channel: str, workspace: str, user_id: str, url: str | None, by: str | None) -> None:
    """Remove the chat user's link (audited): their clicks decide nothing from now on."""
    with _open(url) as store:
        removed = IdentityLinks(store, SystemClock()).unlink(
            channel, workspace, user_id, by=_operator(by)
        )
    click.echo(f"{'unlinked' if removed else 'not linked'}: {channel} {workspace}/{user_id}")


@channels.command("links")
@_db
@_tenant
def list_links(url: str | None, tenant: str) -> None:
    """Every chat link of TENANT that holds now."""
    with _open(url) as store:
        found = IdentityLinks(store, SystemClock()).links(tenant)
    if not found:
        click.echo(f"no chat links in {tenant}")
    for x in found:
        until = (
            "no expiry"
            if x.expires_at is None
            else "until " + from_micros(x.expires_at).astimezone(UTC).isoformat(timespec="seconds")
        )
        roles = ",".join(x.roles) or "-"
        who = f"{x.channel}\t{x.workspace}/{x.user_id}\t{x.subject}"
        click.echo(f"{who}\t{roles}\tby {x.linked_by}\t{until}")


@channels.command("vapid-keys")
def vapid_keys() -> None:
    """Print a new VAPID key pair for Web Push: the private key (keep it secret) and the
    public application server key the browsers subscribe with."""
    from signoff.channels._push import new_vapid_keys

    private, public = new_vapid_keys()
    click.echo(f"SIGNOFF_VAPID_PRIVATE_KEY={private}")
    click.echo(f"# application server key (public): {public}")
