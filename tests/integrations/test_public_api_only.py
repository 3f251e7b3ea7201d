"""Adapters use the public API only: nothing private of signoff outside integrations/ itself."""

from __future__ import annotations

import ast
from pathlib import Path

import signoff

ROOT = Path(signoff.__file__).parent / "integrations"


def test_integrations_import_no_private_module_of_signoff() -> None:
    offenders = []
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            for module in modules:
                parts = module.split(".")
                if parts[0] != "signoff" or module.startswith("signoff.integrations"):
                    continue
                if any(part.startswith("_") for part in parts):
                    offenders.append(f"{path.name}: {module}")
    assert not offenders
    assert len(list(ROOT.rglob("*.py"))) >= 6
