"""The API contract checked into the repository as ``openapi.json``.

It is the document a ``signoff serve`` outside demo mode serves at
``/openapi.json`` (the demo-only ``/v1/demo/*`` routes are left out), rendered
byte for byte the same way every time, so ``signoff openapi > openapi.json``
regenerates the file and a test fails when the served document drifts from it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from signoff.catalog._catalog import Catalog
from signoff.gate._gate import Gate
from signoff.http._app import create_app
from signoff.http._settings import Settings
from signoff.store import SQLiteStore

REGENERATE = "signoff openapi > openapi.json"
"""The command, run at the repository root, that rewrites the checked-in contract."""
_UNUSED_KEY = bytes(32)  # the document never depends on the token key


def served_document() -> dict[str, Any]:
    """What ``GET /openapi.json`` answers on a production ``signoff serve``."""
    with tempfile.TemporaryDirectory(prefix="signoff-openapi-") as folder:
        store = SQLiteStore(Path(folder) / "contract.db")
        try:
            gate = Gate(Catalog(), store, token_key=_UNUSED_KEY)
            app = create_app(Settings(demo=True), gate=gate)
            return app.openapi()
        finally:
            store.close()


def render(document: dict[str, Any]) -> str:
    """The file's exact text: two-space indent, UTF-8 kept, a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"
