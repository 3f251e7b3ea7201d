"""Start-up checks shared by the long-running commands: the store is writable, the port free."""

from __future__ import annotations

import errno
import socket
import sqlite3

from signoff._paths import redacted
from signoff.exceptions import ConfigurationError, StoreUnavailable
from signoff.store import Store


def check_writable(store: Store, url: str) -> None:
    """Write to the store once (a no-op update of its own metadata) before reporting ready."""
    try:
        with store.transaction() as tx:
            tx.run("UPDATE signoff_meta SET value = value WHERE key = ?", ("schema_version",))
    except StoreUnavailable:
        raise
    except (sqlite3.Error, OSError) as exc:
        raise StoreUnavailable(_unwritable(url, exc)) from exc
    except Exception as exc:  # psycopg's errors, without importing the optional driver
        if not type(exc).__module__.startswith("psycopg"):
            raise
        raise StoreUnavailable(_unwritable(url, exc)) from exc


def _unwritable(url: str, exc: BaseException) -> str:
    return (
        f"cannot write to the store {redacted(url)}: {' '.join(str(exc).split())} — "
        "check the file's (or role's) permissions, or use another --db"
    )


def check_port_free(host: str, port: int) -> None:
    """Bind once and release, so a busy port is reported before any banner is printed."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            busy = exc.errno == errno.EADDRINUSE
            what = "is already in use" if busy else f"cannot be bound ({exc.strerror})"
            raise ConfigurationError(
                f"port {port} on {host} {what} — stop the other server or choose --port"
            ) from exc
