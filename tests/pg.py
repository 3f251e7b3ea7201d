"""PostgreSQL for tests: the server named by SIGNOFF_TEST_POSTGRES_URL, a fresh schema each.

Every test that needs PostgreSQL gets a schema of its own (dropped afterwards),
so runs never see each other's rows. When the server is unreachable the test
is skipped, unless ``CI`` is set: then it fails, so CI never passes without
having run the PostgreSQL suite.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

POSTGRES_URL = os.environ.get(
    "SIGNOFF_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)


def require_postgres() -> None:
    """Skip when PostgreSQL is unreachable; fail instead when ``CI`` is set."""
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        message = f"PostgreSQL unreachable at {POSTGRES_URL}: {exc}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*query, ("schema", schema)])))


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


@contextmanager
def fresh_schema(prefix: str = "test") -> Iterator[str]:
    """The test server's URL with ``?schema=`` naming a new, empty schema; dropped afterwards."""
    require_postgres()
    schema = f"signoff_{prefix}_{uuid.uuid4().hex[:12]}"
    try:
        yield with_schema(POSTGRES_URL, schema)
    finally:
        drop_schema(schema)
