"""Summarize a finished `mutmut run`: the score, and which survivors change behaviour.

mutmut also mutates what no behaviour depends on: the words of an error message or a log
line (``"XXwordsXX"``, upper case, ``None``), the ``details`` an exception carries beside
its stable code, the arguments of ``log.info``. A survivor whose only change lies inside the
arguments of a signoff exception or of a log call is *cosmetic*, and so is one that only
changes the case of SQL keywords or unquoted names (the databases read both alike; a
quoted literal such as ``'issued'`` must stay exact); every other survivor is listed, to
be killed by a test or argued equivalent in docs/RELIABILITY.md::

    mutmut run && .venv/bin/python scripts/mutation_report.py

It reads mutmut's own results (``mutants/**/*.meta``) and compares each survivor's
function with the original, node by node.
"""

from __future__ import annotations

import ast
import builtins
import functools
import json
import re
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
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except json.JSONDecodeError:  # mutmut is still writing it: a partial report
            print(f"skipped {meta} (being written)", file=sys.stderr)
            continue
        found.update(data["exit_code_by_key"])
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


_SQL = re.compile(
    r"\b(SELECT|UPDATE|INSERT|DELETE|WHERE|FROM|AND|OR|ORDER BY|NULL|EXISTS|LIMIT|VALUES|SET"
    r"|ON CONFLICT|DO NOTHING|RETURNING|INTO|JOIN)\b"
)


def _sql_fold(text: str) -> str:
    """SQL as the database reads it: keywords and unquoted names in any case, literals exact."""
    parts = text.split("'")
    return "'".join(part if i % 2 else part.lower() for i, part in enumerate(parts))


def sql_case_only(name: str) -> bool:
    """An SQL string whose keywords or unquoted names changed case, and nothing else.

    SQLite and PostgreSQL read ``SELECT``/``select`` and ``p.tenant``/``P.TENANT`` alike,
    so such a mutant is equivalent; a quoted literal (``'issued'``) must stay exact.
    """
    original, mutant, _, _ = functions(name)
    chain = difference(original, mutant)
    if not chain:
        return False
    node, twin = chain[-1]
    if not (isinstance(node, ast.Constant) and isinstance(twin, ast.Constant)):
        return False
    a, b = node.value, twin.value
    return (
        isinstance(a, str)
        and isinstance(b, str)
        and a != b
        and bool(_SQL.search(a))
        and _sql_fold(a) == _sql_fold(b)
    )


def main() -> int:
    found = results(Path.cwd())
    tally = Counter(
        "killed" if c in KILLED else "survived" if c in SURVIVED else
        "no tests" if c in NO_TESTS else "not checked" if c is None else "other"
        for c in found.values()
    )  # fmt: skip
    survivors = sorted(k for k, c in found.items() if c in SURVIVED)
    wording = [name for name in survivors if cosmetic(name)]
    sql_case = [name for name in survivors if name not in wording and sql_case_only(name)]
    logic = [name for name in survivors if name not in wording and name not in sql_case]
    shown = len(wording) + len(sql_case)
    tested = tally["killed"] + tally["survived"]
    print(f"mutants: {len(found)}; " + ", ".join(f"{k} {v}" for k, v in sorted(tally.items())))
    if tested:
        print(f"score (killed / tested): {tally['killed'] / tested:.1%}")
        print(f"score without cosmetic survivors: {tally['killed'] / (tested - shown):.1%}")
    print(
        f"survivors: {len(survivors)} ({len(wording)} cosmetic: message or log words; "
        f"{len(sql_case)} SQL keyword/name case; {len(logic)} change behaviour)"
    )
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
