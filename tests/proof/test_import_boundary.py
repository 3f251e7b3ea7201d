"""`signoff.proof` and `signoff.verify` stand alone: primitives, cryptography and PyJWT only."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import signoff

PACKAGE = Path(signoff.__file__).parent
ALLOWED_SIGNOFF = {
    "signoff._canonical",
    "signoff._clock",
    "signoff.exceptions",
    "signoff.audit._chain",
}
ALLOWED_THIRD_PARTY = {"cryptography", "jwt", "rfc8785"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _modules() -> list[Path]:
    return [*sorted((PACKAGE / "proof").glob("*.py")), PACKAGE / "verify.py"]


def test_proof_imports_no_store_gate_or_web_stack() -> None:
    """Every import in proof/ and verify.py is stdlib, cryptography, PyJWT or a primitive."""
    bad = []
    for path in _modules():
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "signoff":
                if not (name in ALLOWED_SIGNOFF or name.startswith("signoff.proof")):
                    bad.append(f"{path.name}: {name}")
            elif top not in ALLOWED_THIRD_PARTY and top not in sys.stdlib_module_names:
                bad.append(f"{path.name}: {name}")
    assert bad == []


def test_the_primitives_proof_uses_stay_primitive() -> None:
    """The signoff modules proof relies on import nothing from store, gate or http either."""
    for name in ALLOWED_SIGNOFF:
        path = PACKAGE / (name.removeprefix("signoff.").replace(".", "/") + ".py")
        for imported in _imports(path):
            assert imported.split(".")[0] != "signoff" or imported in ALLOWED_SIGNOFF, (
                f"{name} imports {imported}"
            )
