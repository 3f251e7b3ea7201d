"""Mutation testing for what mutmut cannot mutate: the SQL of the single-winner steps.

mutmut changes Python (a ``!=`` to ``==``, a ``return`` to ``return None``) and turns a
string into ``"XX…XX"``, which breaks a statement outright. The guarantees in SQL are
subtler: a ``UNIQUE`` that makes a second execution of one token impossible, an
``AND status = 'issued'`` that makes one consumer win. Each mutant below removes one of
them from a copy of ``src/``, runs the tests that should notice, and reports whether they
did (killed) or not (survived)::

    .venv/bin/python scripts/sql_mutants.py            # every mutant
    .venv/bin/python scripts/sql_mutants.py --list     # what each one removes

Exit 0 when every mutant is killed. See docs/RELIABILITY.md, "Mutation testing".
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STORE = "src/signoff/store/"
CONTRACT = "tests/test_store_contract.py"
RACES = "tests/test_races.py"
STEPS = "tests/test_step_premises.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    equivalent: str | None = None
    """Why no test can kill it (another guard makes the change unobservable)."""


MUTANTS = (
    Mutant(
        "executions.token_id not UNIQUE",
        STORE + "_migrations.py",
        "token_id TEXT NOT NULL UNIQUE REFERENCES tokens (token_id),",
        "token_id TEXT NOT NULL REFERENCES tokens (token_id),",
        (CONTRACT + "::test_one_execution_per_token",),
    ),
    Mutant(
        "executions.request_key not UNIQUE",
        STORE + "_migrations.py",
        "request_key TEXT NOT NULL UNIQUE,\n            status TEXT NOT NULL,\n"
        "            attempts",
        "request_key TEXT NOT NULL,\n            status TEXT NOT NULL,\n            attempts",
        (CONTRACT + "::test_one_execution_per_request_key",),
    ),
    Mutant(
        "proposals.request_key not UNIQUE",
        STORE + "_migrations.py",
        "request_key TEXT NOT NULL UNIQUE,\n            status TEXT NOT NULL,\n            version",
        "request_key TEXT NOT NULL,\n            status TEXT NOT NULL,\n            version",
        (CONTRACT + "::test_duplicate_request_key_is_an_integrity_error",),
    ),
    Mutant(
        "idempotency key not unique per (tenant, scope, key)",
        STORE + "_migrations.py",
        "PRIMARY KEY (tenant, actor, idem_key)",
        "PRIMARY KEY (tenant, actor, idem_key, created_at)",
        (CONTRACT + "::test_one_idempotency_record_per_tenant_scope_and_key",),
    ),
    Mutant(
        "one decision per person not enforced",
        STORE + "_migrations.py",
        "PRIMARY KEY (proposal_id, approver)",
        "PRIMARY KEY (proposal_id, approver, decided_at)",
        (CONTRACT + "::test_one_decision_per_person_and_proposal",),
    ),
    Mutant(
        "consume and start without AND status = 'issued' (SQLite)",
        STORE + "_q_steps.py",
        "\"WHERE token_id = ? AND status = 'issued' AND expires_at > ?\",",
        '"WHERE token_id = ? AND expires_at > ?",',
        (STEPS, CONTRACT, RACES, "tests/test_execute.py"),
    ),
    Mutant(
        "consume and start without AND status = 'issued' (PostgreSQL)",
        STORE + "_pg_functions.py",
        "WHERE token_id = p_token_id AND status = 'issued' AND expires_at > p_now;",
        "WHERE token_id = p_token_id AND expires_at > p_now;",
        (STEPS, "tests/test_pg_races.py"),
    ),
    Mutant(
        "consume and start after the confirmation expired (SQLite)",
        STORE + "_q_steps.py",
        "\"WHERE token_id = ? AND status = 'issued' AND expires_at > ?\",",
        "\"WHERE token_id = ? AND status = 'issued' AND ? > 0\",",
        (STEPS, "tests/test_faults.py"),
    ),
    Mutant(
        "revoke_token revokes a consumed token too",
        STORE + "_q_tokens.py",
        "\"UPDATE tokens SET status = 'revoked' WHERE proposal_id = ? AND status = 'issued'\",",
        "\"UPDATE tokens SET status = 'revoked' WHERE proposal_id = ?\",",
        (
            CONTRACT,
            "tests/test_execute.py",
            "tests/test_lifecycle_model.py",
        ),
        equivalent="revoke runs only after `confirmed -> revoked` won in the same transaction, "
        "and consuming moved the proposal out of `confirmed` first: a consumed token's "
        "proposal can never be revoked",
    ),
    Mutant(
        "a decision ignores the version it was checked against (SQLite)",
        STORE + "_q_steps.py",
        "\"WHERE proposal_id = ? AND status = 'awaiting_confirmation' AND version = ? \"",
        "\"WHERE proposal_id = ? AND status = 'awaiting_confirmation' AND ? > 0 \"",
        (STEPS, RACES, "tests/test_decide.py"),
    ),
    Mutant(
        "a decision ignores the version it was checked against (PostgreSQL)",
        STORE + "_pg_functions.py",
        "AND version = p_expected_version AND expires_at > p_now;",
        "AND expires_at > p_now;",
        (STEPS, "tests/test_pg_races.py"),
    ),
    Mutant(
        "a write whose role entries changed since its read goes ahead (SQLite)",
        STORE + "_q_steps.py",
        "            if (None if row is None else not row[0]) is not entry:\n"
        '                raise PremiseFailed("role_entries")',
        "            pass",
        (STEPS,),
    ),
    Mutant(
        "a write whose role entries changed since its read goes ahead (PostgreSQL)",
        STORE + "_pg_functions.py",
        "'none') <> r.entry",
        "'none') = 'never'",
        (STEPS,),
    ),
    Mutant(
        "transition_proposal ignores the current status",
        STORE + "_q_proposals.py",
        "f\"WHERE proposal_id = ? AND status IN ({','.join('?' * len(sources))})\"",
        'f"WHERE proposal_id = ? AND ? = ?"',
        (CONTRACT, RACES, "tests/test_decide.py", "tests/test_execute.py"),
    ),
    Mutant(
        "an execution moves whatever its status",
        STORE + "_q_executions.py",
        "f\"WHERE execution_id = ? AND status IN ({','.join('?' * len(sources))})\"",
        "f\"WHERE execution_id = ? AND ({' OR '.join('? = ?' for _ in sources[:1])} OR 1=1)\"",
        (CONTRACT, "tests/test_reconcile.py", "tests/test_faults.py", "tests/test_consent.py"),
    ),
    Mutant(
        "claim_execution ignores a live lease",
        STORE + "_q_executions.py",
        '"AND COALESCE(lease_until, 0) < ?",',
        '"AND ? > 0",',
        (CONTRACT, "tests/test_reconcile.py"),
    ),
    Mutant(
        "a revoked directory entry still grants the role",
        STORE + "_q_roles.py",
        "entry = None if row is None else not row[0]",
        "entry = None if row is None else True",
        ("tests/test_roles.py", "tests/http/test_consent_server.py"),
    ),
    Mutant(
        "a revoked directory entry read ahead still grants the role",
        STORE + "_q_roles.py",
        "self._roles_known[key] = None if revoked is None else not revoked",
        "self._roles_known[key] = None if revoked is None else True",
        ("tests/test_roles.py", "tests/http/test_consent_server.py"),
    ),
    Mutant(
        "the circle's WHERE clause lets everyone in",
        STORE + "_q_proposals.py",
        '        return "p.requester_subject = ?", [circle.subject]',
        '        return "p.requester_subject <> ?", [""]',
        ("tests/test_circle.py", "tests/http/test_consent_server.py"),
    ),
    Mutant(
        "the inbox lists what the person already decided",
        STORE + "_q_proposals.py",
        '"AND NOT EXISTS (SELECT 1 FROM decisions d "\n'
        '            "WHERE d.proposal_id = p.proposal_id AND d.approver = ?)"',
        '"AND ? IS NOT NULL"',
        ("tests/test_circle.py", "tests/test_policy.py"),
    ),
)


def run(mutant: Mutant, python: str) -> tuple[bool, float]:
    """Apply ``mutant`` to a copy of src/, run its tests; True if they failed (killed)."""
    with tempfile.TemporaryDirectory(prefix="sql-mutant-") as scratch:
        src = Path(scratch) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__"))
        target = Path(scratch) / mutant.path
        text = target.read_text(encoding="utf-8")
        if text.count(mutant.old) != 1:
            raise SystemExit(
                f"error [mutant_stale]: {mutant.name}: the text to change is gone "
                f"from {mutant.path} — update scripts/sql_mutants.py"
            )
        target.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(src), "CI": os.environ.get("CI", "true")}
        started = time.monotonic()
        result = subprocess.run(  # noqa: S603 - our own interpreter and test paths
            [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        return result.returncode != 0, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print the mutants and exit")
    args = parser.parse_args()
    if args.list:
        for mutant in MUTANTS:
            print(f"{mutant.name}  ({mutant.path}; tests: {', '.join(mutant.tests)})")
        return 0
    killed = equivalent = 0
    for mutant in MUTANTS:
        dead, seconds = run(mutant, sys.executable)
        killed += dead
        if not dead and mutant.equivalent:
            equivalent += 1
            verdict = "equivalent"
        else:
            verdict = "killed" if dead else "SURVIVED"
        print(f"{verdict:10} {seconds:6.1f} s  {mutant.name}", flush=True)
    print(f"{killed}/{len(MUTANTS)} SQL mutants killed, {equivalent} equivalent")
    return 0 if killed + equivalent == len(MUTANTS) else 1


if __name__ == "__main__":
    sys.exit(main())
