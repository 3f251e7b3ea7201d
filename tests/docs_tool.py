"""docs/TOOLS.md's first tool, loaded from the page itself, for the tests that use it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def python_blocks() -> list[str]:
    """The ```python blocks of docs/TOOLS.md, in order."""
    text = (ROOT / "docs" / "TOOLS.md").read_text(encoding="utf-8")
    return [part.split("```", 1)[0] for part in text.split("```python\n")[1:]]


def load_first_tool(directory: Path) -> ModuleType:
    """The first block saved as ``first_tool.py`` in ``directory`` and imported from there."""
    path = directory / "first_tool.py"
    path.write_text(python_blocks()[0], encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"first_tool_{abs(hash(directory))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
