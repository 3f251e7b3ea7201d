"""Where signoff keeps its own state by default: one data directory, never the CWD.

``SIGNOFF_DATA_DIR`` names it; otherwise the platform's user data directory
(``~/.local/share/signoff`` on Linux, via platformdirs). The default database,
the demo shop and their lock and WAL files all live there.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

DATA_DIR_ENV = "SIGNOFF_DATA_DIR"
DEFAULT_DB_NAME = "signoff.db"


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """The data directory (created on first use)."""
    configured = (os.environ if env is None else env).get(DATA_DIR_ENV)
    if configured:
        path = Path(configured).expanduser()
    else:
        from platformdirs import user_data_path

        path = user_data_path("signoff", appauthor=False)
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_database_url() -> str:
    return str(data_dir() / DEFAULT_DB_NAME)


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


def redacted(url: str) -> str:
    """A database URL fit to print: any password replaced by ``***``."""
    if not is_postgres(url):
        return url
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
        return urlunsplit(parts._replace(netloc=netloc))
    except ValueError:
        return url.split("://", 1)[0] + "://…"


def demo_shop_file(database_url: str) -> str:
    """The demo shop: next to a SQLite database, or in the data directory for PostgreSQL."""
    if is_postgres(database_url):
        return str(data_dir() / "demo.shop.sqlite")
    path = database_url.removeprefix("sqlite:///").removeprefix("sqlite://")
    return f"{Path(path)}.shop.sqlite"
