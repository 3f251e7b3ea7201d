"""The hot path's JSON and event hashes are byte-identical to what they replaced.

Each reference below is the code as it was before issue 28 (kept here, not imported): the
event hash as the JCS of a document (`canonical_flat`, and rfc8785 itself), the stored JSON
of a column or an audit event's `data` as one `json.dumps` call, the preview digest and the
arguments' JSON text likewise. Hypothesis draws any text (control characters, quotes,
backslashes, non-BMP, lone surrogates), ints in and out of I-JSON's range, and None.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff._canonical import canonical_flat
from signoff.audit._chain import event_hash
from signoff.gate._propose import _digest_of
from signoff.store._sqlbase import _dump

SAFE = 2**53 - 1
anything = st.characters(blacklist_categories=())  # surrogates included
texts = st.text(alphabet=anything, max_size=40) | st.text(max_size=200)
optional = st.none() | texts
ints = st.integers(min_value=-SAFE, max_value=SAFE) | st.integers()


def reference_event_hash(**fields: Any) -> str:
    """event_hash before issue 28: the document through canonical_flat."""
    document = {k: fields[k] for k in (
        "tenant", "seq", "at", "kind", "proposal_id", "execution_id", "actor", "data",
        "prev_hash",
    )}  # fmt: skip
    if fields.get("mac") is not None:
        document["mac"] = fields["mac"]
    return hashlib.sha256(canonical_flat(document)).hexdigest()


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "value", call()
    except Exception as exc:
        return "raises", type(exc)


@settings(max_examples=1500)
@given(
    tenant=texts, seq=ints, at=ints, kind=texts, proposal_id=optional, execution_id=optional,
    actor=optional, data=texts, prev_hash=texts, mac=optional,
)  # fmt: skip
def test_event_hash_is_the_old_hash(**fields: Any) -> None:
    """Same hex digest for every event, and the same refusal where the old one refused."""
    assert _outcome(lambda: event_hash(**fields)) == _outcome(
        lambda: reference_event_hash(**fields)
    )


@settings(max_examples=500)
@given(
    tenant=st.text(), seq=st.integers(1, SAFE), at=st.integers(0, SAFE), kind=st.text(),
    proposal_id=st.none() | st.text(), execution_id=st.none() | st.text(),
    actor=st.none() | st.text(), data=st.text(), prev_hash=st.text(),
    mac=st.none() | st.text(),
)  # fmt: skip
def test_event_hash_is_rfc8785s(**fields: Any) -> None:
    """…and that hash is SHA-256 of the very bytes rfc8785 writes for the document."""
    document = {k: v for k, v in fields.items() if k != "mac" or v is not None}
    assert event_hash(**fields) == hashlib.sha256(rfc8785.dumps(document)).hexdigest()


def test_event_hash_keeps_the_mac_member_only_when_there_is_one() -> None:
    """A None mac is no member at all (events written before MACs hash as they did)."""
    fields: dict[str, Any] = dict(
        tenant="acme", seq=1, at=2, kind="k", proposal_id=None, execution_id=None,
        actor=None, data="{}", prev_hash="0" * 64,
    )  # fmt: skip
    assert event_hash(**fields) == event_hash(**fields, mac=None)
    assert event_hash(**fields) != event_hash(**fields, mac="v1.m")


json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | ints | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=800)
@given(json_values)
def test_stored_json_is_the_old_dumps(value: Any) -> None:
    """A column's JSON text (an audit event's `data` among them) is the old json.dumps."""
    old = lambda: json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)  # noqa: E731
    assert _outcome(lambda: _dump(value)) == _outcome(old)


@settings(max_examples=400)
@given(json_values)
def test_preview_digest_is_the_old_digest(value: Any) -> None:
    """`preview_digest`, hashed into proposal.created, is what it was."""
    old = lambda: hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()  # noqa: E731
    assert _outcome(lambda: _digest_of(value)) == _outcome(old)


@settings(max_examples=300)
@given(st.dictionaries(texts, json_values, max_size=6))
def test_arguments_text_is_the_old_text(value: dict[str, Any]) -> None:
    """The arguments' JSON handed to pydantic is the old `json.dumps(raw, allow_nan=False)`."""
    from signoff.catalog._tool import _ARGUMENTS_JSON

    old = lambda: json.dumps(value, allow_nan=False)  # noqa: E731
    assert _outcome(lambda: _ARGUMENTS_JSON(value)) == _outcome(old)


@pytest.mark.parametrize("bad", [2**53, -(2**53), True])
def test_an_int_outside_ijson_takes_the_old_path(bad: int) -> None:
    """seq/at beyond ±(2⁵³−1), or a bool, are not formatted by hand: same answer as before."""
    fields: dict[str, Any] = dict(
        tenant="t", seq=bad, at=1, kind="k", proposal_id=None, execution_id=None, actor=None,
        data="{}", prev_hash="0" * 64,
    )  # fmt: skip
    assert _outcome(lambda: event_hash(**fields)) == _outcome(
        lambda: reference_event_hash(**fields)
    )
