"""Lazy public names for ``signoff/__init__.py``: read its ``if TYPE_CHECKING:`` imports once.

The package's own import lines stay the single list of where each public name
lives (mypy reads them); at run time the first access to a name imports its
module, so commands that need none of them start fast.
"""

from __future__ import annotations

import ast
import importlib
import sys
from functools import cache


@cache
def _table(path: str) -> dict[str, tuple[str, str]]:
    """``{public name: (module, attribute)}`` from the TYPE_CHECKING block of ``path``."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    table: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        table[alias.asname or alias.name] = (statement.module, alias.name)
    return table


def resolve(package: str, path: str, name: str) -> object:
    """The attribute ``name`` of ``package``, imported now and cached on the package."""
    entry = _table(path).get(name)
    if entry is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(entry[0]), entry[1])
    setattr(sys.modules[package], name, value)
    return value
