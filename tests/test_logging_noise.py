"""Logs say what signoff did: psycopg's pool chatter stays below WARNING unless debugging."""

from __future__ import annotations

import subprocess
import sys

import pytest

from signoff._logging import logging_config
from tests.pg import fresh_schema

PROBE = """
import logging, sys
from signoff._logging import configure_logging
from signoff.store import open_store
configure_logging(sys.argv[2])
store = open_store(sys.argv[1])
for _ in range(20):
    with store.read() as tx:
        tx.run("SELECT 1")
store.close()
logging.getLogger("signoff").info("probe done")
"""


def test_the_pool_logger_is_held_at_warning_below_debug() -> None:
    """info/warning keep psycopg.pool at WARNING; debug lets it through."""
    assert logging_config("info")["loggers"]["psycopg.pool"]["level"] == "WARNING"
    assert logging_config("error")["loggers"]["psycopg.pool"]["level"] == "ERROR"
    assert logging_config("debug")["loggers"]["psycopg.pool"]["level"] == "DEBUG"


@pytest.mark.postgres
def test_a_postgresql_store_at_info_logs_no_pool_lines() -> None:
    """Opening the pool and 20 transactions at INFO: not one psycopg.pool line, and
    signoff's own INFO lines still show."""
    with fresh_schema("logs") as url:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, url, "info"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
    assert "probe done" in done.stderr
    assert "psycopg.pool" not in done.stderr, done.stderr
