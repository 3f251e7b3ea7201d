"""Every CLI failure as one line: ``error [code]: what happened — what to do``.

Exit 2 for an error, 1 for a check that ran and failed (the command exits
itself). A traceback is printed only with ``--debug`` (or ``SIGNOFF_DEBUG=1``).
"""

from __future__ import annotations

import sqlite3
import sys
import traceback
from collections.abc import Sequence

import click

from signoff.exceptions import SignoffError

EXIT_ERROR = 2
DASH = " — "
# What to do, for errors whose message only says what happened.
HINTS: dict[str, str] = {
    "store_unavailable": "check that the database is reachable and writable, or use another --db",
    "store_error": "check --db (a SQLite path or a postgresql:// URL)",
    "schema_too_new": "upgrade signoff to the version that wrote this database",
    "invalid_database_url": "write postgresql://USER@HOST:PORT/DB[?schema=NAME] or a SQLite path",
    "invalid_settings": "see `signoff serve --help` and docs/OPERATIONS.md",
    "usage": "see the command's --help",
}
GENERIC_HINT = "rerun with --debug for the traceback and report it if it looks like a bug"


def debug_requested(args: Sequence[str], env: dict[str, str]) -> bool:
    return "--debug" in args or env.get("SIGNOFF_DEBUG", "") not in ("", "0")


def one_line(code: str, message: str) -> str:
    """The error line; the hint for ``code`` is added when the message names no next step."""
    text = " ".join(message.split())
    if DASH not in text:
        text += DASH + HINTS.get(code, GENERIC_HINT)
    return f"error [{code}]: {text}"


def describe(exc: BaseException) -> tuple[str, str]:
    """``(code, message)`` for anything a command may raise."""
    if isinstance(exc, SignoffError):
        return exc.code, exc.message
    if isinstance(exc, click.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else "signoff"
        return "usage", f"{exc.format_message()}{DASH}see `{where} --help`"
    if isinstance(exc, click.ClickException):
        return "invalid_input", exc.format_message()
    if isinstance(exc, sqlite3.Error):
        return "store_unavailable", f"SQLite: {exc}"
    if type(exc).__module__.startswith(("psycopg.", "psycopg_pool")):
        return "store_unavailable", f"PostgreSQL: {exc}"
    if isinstance(exc, OSError):
        return "os_error", f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return "internal", f"{type(exc).__name__}: {exc}"


def report(exc: BaseException, *, debug: bool) -> int:
    """Print the one line (and the traceback when debugging); return the exit status."""
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    code, message = describe(exc)
    click.echo(one_line(code, message), err=True)
    return EXIT_ERROR
