"""The settings table, from the one place settings are declared (``Settings.model_fields``).

Shown at the end of ``signoff serve --help`` and kept equal to the table in
docs/OPERATIONS.md by a test.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import PydanticUndefined

from signoff.http._settings import ENV_PREFIX, Settings

# Settings that `signoff serve` also takes as a flag; secrets never are (they would show in ps).
SERVE_FLAGS = {
    "database_url": "--db",
    "host": "--host",
    "port": "--port",
    "workers": "--workers",
    "demo": "--demo",
    "catalog": "--catalog",
    "policy_file": "--policy",
    "log_level": "--log-level",
    "log_format": "--log-format",
    "public_url": "--public-url",
    "reconcile_interval_seconds": "--reconcile-interval",
    "upstreams": "--upstream",
}


DATA_DIR_HELP = "Where the default database and the demo shop live."


DATA_DIR_HELP = "Where the default database and the demo shop live."


def settings_rows() -> list[tuple[str, str, str, str]]:
    """``(variable, flag, default, description)`` for every setting, in declaration order."""
    rows = []
    for name, info in Settings.model_fields.items():
        rows.append(
            (
                ENV_PREFIX + name.upper(),
                SERVE_FLAGS.get(name, ""),
                _default(name, info.default),
                info.description or "",
            )
        )
    return rows


def _default(name: str, value: Any) -> str:
    if name == "database_url":
        return "signoff.db in the data directory"
    if value is PydanticUndefined or value is None or value == ():
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def settings_epilog() -> str:
    """The table as plain text for click (``\\b`` keeps click from re-wrapping it)."""
    lines = [
        "\b",
        "Settings: flag > SIGNOFF_* environment > TOML key (the name in lower case, "
        "in a [signoff] table).",
        "Secrets (SIGNOFF_TOKEN_KEY, SIGNOFF_JWT_HS256_SECRET) only from the environment or TOML.",
    ]
    rows = [
        *settings_rows(),
        ("SIGNOFF_CONFIG", "--config", "", "The TOML file."),
        ("SIGNOFF_DATA_DIR", "", "the platform's user data directory", DATA_DIR_HELP),
    ]
    for variable, flag, default, description in rows:
        head = ", ".join(filter(None, (variable, flag)))
        lines.append(f"  {head}" + (f"  [default: {default}]" if default else ""))
        lines.append(f"      {description}")
    return "\n".join(lines)


def markdown_table() -> str:
    """The same table in Markdown, as docs/OPERATIONS.md shows it."""
    lines = ["| variable | `serve` flag | default | meaning |", "|---|---|---|---|"]
    for variable, flag, default, description in settings_rows():
        flag_text = f"`{flag}`" if flag else ""
        lines.append(f"| `{variable}` | {flag_text} | {default} | {description} |")
    return "\n".join(lines)
