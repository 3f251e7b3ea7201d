"""`signoff openapi`: print the API contract, the document checked in as openapi.json."""

from __future__ import annotations

import click


@click.command("openapi")
def openapi() -> None:
    """Print the API contract that `signoff serve` serves (checked in as openapi.json)."""
    from signoff.http._contract import render, served_document

    click.echo(render(served_document()), nl=False)
