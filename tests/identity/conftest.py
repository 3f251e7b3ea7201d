"""A real OpenID provider per test module (see ``tests/identity/idp.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.identity.idp import Idp, SigningKey


@pytest.fixture
def idp(tmp_path: Path) -> Iterator[Idp]:
    provider = Idp(tmp_path).start([SigningKey("k1")])
    try:
        yield provider
    finally:
        provider.stop()
