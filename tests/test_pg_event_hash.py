"""PostgreSQL hashes audit events server-side (migrations 6, 7): byte for byte as in Python."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from signoff.audit._chain import GENESIS, event_hash, verify_chain
from tests.pg import fresh_schema

pytestmark = pytest.mark.postgres

SAFE = 2**53 - 1
# Anything a PostgreSQL text value can hold: no NUL, no lone surrogate (not UTF-8).
any_text = st.text(alphabet=st.characters(exclude_categories=["Cs"], exclude_characters="\0"))
control_heavy = st.text(alphabet=st.sampled_from('\x01\x08\t\n\x0c\r\x1f"\\/\x7f\u2028é€😀'))
texts = any_text | control_heavy
events = st.fixed_dictionaries(
    {
        "tenant": texts,
        "seq": st.integers(min_value=1, max_value=SAFE),
        "at": st.integers(min_value=-SAFE, max_value=SAFE),
        "kind": texts,
        "proposal_id": st.none() | texts,
        "execution_id": st.none() | texts,
        "actor": st.none() | texts,
        "data": texts,
        "prev_hash": st.just(GENESIS) | texts,
        "mac": st.none() | texts,
    }
)


@pytest.fixture(scope="module")
def store() -> Iterator[Any]:
    from signoff.store._postgres import PostgresStore

    with fresh_schema("hash") as url:
        store = PostgresStore(url)
        store.migrate()
        try:
            yield store
        finally:
            store.close()


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events)
def test_server_hash_equals_event_hash(store: Any, event: dict[str, Any]) -> None:
    """signoff_event_hash(...) = sha256(JCS(event)) as audit._chain computes it."""
    with store.read() as tx:
        row = tx.run(
            "SELECT signoff_event_hash(?::text, ?::bigint, ?::bigint, ?::text, ?::text, "
            "?::text, ?::text, ?::text, ?::text, ?::text)",
            (
                event["tenant"],
                event["seq"],
                event["at"],
                event["kind"],
                event["proposal_id"],
                event["execution_id"],
                event["actor"],
                event["data"],
                event["prev_hash"],
                event["mac"],
            ),
        ).fetchone()
    assert row[0] == event_hash(**event)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(texts, texts, st.none() | texts), min_size=1, max_size=4))
def test_chains_appended_by_the_server_verify(store: Any, appends: list[Any]) -> None:
    """Events appended by signoff_append_audit (server-side head lock and hash) verify in
    Python, whatever their text: link, hash and head."""
    with store.transaction() as tx:
        for tenant, kind, actor in appends:
            tx.append_audit(tenant="t:" + tenant, at=1, kind=kind, actor=actor, data={"k": kind})
    with store.read() as tx:
        report = verify_chain(tx.audit_events(), tx.audit_heads())
    assert report.ok, report.first_bad
