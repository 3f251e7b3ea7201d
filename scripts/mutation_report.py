"""Summarize a finished `mutmut run`: the score, and which survivors change behaviour.

mutmut also mutates what no behaviour depends on: the words of an error message or a log
line (``"XXwordsXX"``, upper case, ``None``), the ``details`` an exception carries beside
its stable code, the arguments of ``log.info``. A survivor whose only change lies inside the
arguments of a signoff exception or of a log call is *cosmetic*; every other survivor is
listed, to be killed by a test or argued equivalent in docs/RELIABILITY.md::

    mutmut run && .venv/bin/python scripts/mutation_report.py

It reads mutmut's own results (``mutants/**/*.meta``) and compares each survivor's
function with the original, node by node.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import sys
import textwrap
from collections import Counter
from pathlib import Path

import libcst as cst
from mutmut.mutation.diff_apply import (
    find_mutant,
    read_mutant_function,
    read_mutants_module,
    read_original_function,
)

import signoff.exceptions

KILLED = {1, 3, 37}
SURVIVED = {0}
NO_TESTS = {5, 33}
EXCEPTIONS = {
    name
    for space in (vars(signoff.exceptions), vars(builtins))
    for name, value in space.items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def results(root: Path) -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for meta in root.glob("mutants/**/*.meta"):
        found.update(json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"])
    return found


@functools.cache
def _module(path: str) -> cst.Module:
    return read_mutants_module(path)


@functools.cache
def functions(name: str) -> tuple[ast.AST, ast.AST, str, str]:
    module = _module(str(find_mutant(name).path))
    codes = [
        textwrap.dedent(cst.Module([f]).code)
        for f in (read_original_function(module, name), read_mutant_function(module, name))
    ]
    return ast.parse(codes[0]), ast.parse(codes[1]), codes[0], codes[1]


Pair = tuple[ast.AST, ast.AST]


def difference(a: ast.AST, b: ast.AST, path: tuple[Pair, ...] = ()) -> tuple[Pair, ...]:
    """The chain of (original, mutant) nodes from the root to where the trees first differ."""
    here = (*path, (a, b))
    if type(a) is not type(b):
        return here
    for field in a._fields:
        x, y = getattr(a, field, None), getattr(b, field, None)
        if isinstance(x, ast.AST) and isinstance(y, ast.AST):
            found = difference(x, y, here)
            if found:
                return found
        elif isinstance(x, list) and isinstance(y, list):
            if len(x) != len(y):
                return here
            for p, q in zip(x, y, strict=True):
                if isinstance(p, ast.AST) and isinstance(q, ast.AST):
                    found = difference(p, q, here)
                    if found:
                        return found
                elif p != q:
                    return here
        elif x != y:
            return here
    return ()


def _callee(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        return f"{func.value.id}.{func.attr}"
    return ""


def cosmetic(name: str) -> bool:
    """Only the message, details or log arguments of an exception or a log call differ."""
    original, mutant, _, _ = functions(name)
    chain = difference(original, mutant)
    for depth, (node, twin) in enumerate(chain):
        if not (isinstance(node, ast.Call) and isinstance(twin, ast.Call)):
            continue
        callee = _callee(node)
        if not (callee in EXCEPTIONS or callee.startswith("log.")):
            continue
        same_callee = ast.dump(node.func) == ast.dump(twin.func)
        below = chain[depth + 1][0] if depth + 1 < len(chain) else None
        if same_callee and below is not node.func:
            return True
    return False


def main() -> int:
    found = results(Path.cwd())
    tally = Counter(
        "killed" if c in KILLED else "survived" if c in SURVIVED else
        "no tests" if c in NO_TESTS else "not checked" if c is None else "other"
        for c in found.values()
    )  # fmt: skip
    survivors = sorted(k for k, c in found.items() if c in SURVIVED)
    logic = [name for name in survivors if not cosmetic(name)]
    shown = len(survivors) - len(logic)
    tested = tally["killed"] + tally["survived"]
    print(f"mutants: {len(found)}; " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    if tested:
        print(f"score (killed / tested): {tally['killed'] / tested:.1%}")
        print(f"score without cosmetic survivors: {tally['killed'] / (tested - shown):.1%}")
    print(f"survivors: {len(survivors)} ({shown} cosmetic, {len(logic)} change behaviour)")
    for name in logic:
        _, _, before, after = functions(name)
        print(f"\n{name}")
        old, new = before.splitlines(), after.splitlines()
        for line in [x for x in old if x not in new]:
            print(f"  - {line.strip()}")
        for line in [x for x in new if x not in old]:
            print(f"  + {line.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
