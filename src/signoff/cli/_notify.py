"""`signoff notify`: deliver audit events to webhooks and e-mail, once or as a worker."""

from __future__ import annotations

import os
import threading
from datetime import timedelta

import click

from signoff._paths import default_database_url
from signoff._telemetry import configure_tracing
from signoff.cli._main import DB_HELP
from signoff.cli._options import DATABASE
from signoff.cli._signals import stop_on_signals
from signoff.exceptions import InvalidRequest
from signoff.notify import Backoff, ConfigError, Notifier, load_config
from signoff.store import open_store


@click.command("notify")
@click.option(
    "--db",
    type=DATABASE,
    envvar="SIGNOFF_DATABASE_URL",
    default=None,
    help=DB_HELP,
)
@click.option(
    "--config",
    "config_path",
    envvar="SIGNOFF_NOTIFY_CONFIG",
    required=True,
    metavar="FILE",
    help="TOML file naming the webhooks and the e-mail channel (env SIGNOFF_NOTIFY_CONFIG).",
)
@click.option("--once", is_flag=True, help="One pass: enqueue what is new, send what is due.")
def notify(db: str | None, config_path: str, once: bool) -> None:
    """Deliver proposal and execution events from the audit chain; retry; dead-letter.

    Each destination reads the audit chain after its own cursor (stored in the
    database), so a restart, or a kill -9, loses no event; a redelivery keeps
    its webhook-id. Run as many as you like: each delivery is leased to one.
    """  # fmt: skip
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        raise InvalidRequest(f"{exc} — fix the notify configuration") from exc
    configure_tracing(None, os.environ)  # traced when OTEL_EXPORTER_OTLP_ENDPOINT is set
    with open_store(db or default_database_url()) as store:
        receipts = None
        if config.email is not None and config.email.receipts:
            from signoff.cli._proof import _gate, cli_proof

            proof = cli_proof(None, None, None, "e-mailing signed receipts signs them")
            receipts = _gate(store, proof).signed_receipt_for
        try:
            channels = config.channels(store=store, receipts=receipts)
        except ConfigError as exc:
            raise InvalidRequest(f"{exc} — fix the notify configuration") from exc
        notifier = Notifier(
            store,
            channels,
            public_url=config.public_url,
            backoff=Backoff(first=timedelta(seconds=config.backoff_seconds)),
            lease=timedelta(seconds=config.lease_seconds),
        )
        try:
            if once:
                sent = notifier.run_once()
                click.echo(f"delivered {sent} notifications", err=True)
                return
            stop = threading.Event()
            with stop_on_signals(stop):
                notifier.run(stop, interval=config.interval_seconds)
        finally:
            notifier.close()
