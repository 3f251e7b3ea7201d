"""The C fast path of canonical_json writes exactly rfc8785's bytes."""

from __future__ import annotations

from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from signoff import canonical_json
from signoff._canonical import _plain
from signoff.exceptions import InvalidArguments

SAFE = 2**53 - 1
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE, max_value=SAFE)
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x3F))
)
ascii_keys = st.text(alphabet=st.characters(max_codepoint=0x7F))
documents: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(ascii_keys | st.text(), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=600)
@given(documents)
def test_fast_path_equals_rfc8785(value: Any) -> None:
    """Every str/int/bool/None document serializes to the very bytes rfc8785 writes."""
    try:
        expected = rfc8785.dumps(value)
    except rfc8785.CanonicalizationError:
        with pytest.raises(InvalidArguments):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


@settings(max_examples=200)
@given(st.dictionaries(ascii_keys, scalars, max_size=8))
def test_flat_ascii_documents_take_the_fast_path(value: dict[str, Any]) -> None:
    """Flat documents with ASCII keys, like audit events, are the ones the fast path takes."""
    assert _plain(value)
    assert canonical_json(value) == rfc8785.dumps(value)


@pytest.mark.parametrize(
    "value",
    [
        2**53,
        -(2**53),
        {"amount": 2**60},
        ["\ud800"],
        {"k": "\udfff"},
        {"x": 1.5},
    ],
)
def test_out_of_domain_values_are_refused_as_before(value: Any) -> None:
    """Unsafe integers, lone surrogates and floats are refused, never written by the fast path."""
    with pytest.raises(InvalidArguments):
        canonical_json(value)


def test_non_ascii_keys_and_subclasses_fall_back() -> None:
    """Keys outside ASCII sort by UTF-16 code units, so they take rfc8785's path."""
    assert not _plain({"\U0001f600": 1, "\uff61": 2})
    assert canonical_json({"\U0001f600": 1, "\uff61": 2}) == rfc8785.dumps(
        {"\U0001f600": 1, "\uff61": 2}
    )


flat_values = st.none() | st.text() | st.integers() | st.integers(min_value=-SAFE, max_value=SAFE)


@settings(max_examples=300)
@given(st.dictionaries(ascii_keys, flat_values, max_size=9))
def test_canonical_flat_equals_canonical_json(value: dict[str, Any]) -> None:
    """The audit hash's shortcut writes canonical_json's bytes, or refuses as it does."""
    from signoff._canonical import canonical_flat

    try:
        expected = canonical_json(value)
    except InvalidArguments:
        with pytest.raises(InvalidArguments):
            canonical_flat(value)
        return
    assert canonical_flat(value) == expected
