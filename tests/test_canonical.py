"""RFC 8785 canonical JSON and the argument digest."""

from __future__ import annotations

import pytest

from signoff import args_digest, canonical_json, resource_set_digest
from signoff._canonical import fingerprint
from signoff.exceptions import InvalidArguments

ARGS = {"order_id": "ord_1001", "amount_minor": 19900, "currency": "CNY", "reason": None}


def test_rfc8785_key_order_is_utf16() -> None:
    """Keys sort by UTF-16 code units, as RFC 8785 section 3.2.3 requires."""
    assert canonical_json({"b": 1, "a": [True, None, "x"], "\u20ac": 2, "\U0001f600": 3}) == (
        '{"a":[true,null,"x"],"b":1,"\u20ac":2,"\U0001f600":3}'.encode()
    )


def test_key_reorder_keeps_the_digest() -> None:
    """Reordering keys never changes the digest."""
    reordered = dict(reversed(list(ARGS.items())))
    assert args_digest("refund_order", "1", ARGS) == args_digest("refund_order", "1", reordered)


@pytest.mark.parametrize(
    ("tool", "version", "changes"),
    [
        ("refund_order", "1", {"amount_minor": 19901}),
        ("refund_order", "1", {"order_id": "ord_1002"}),
        ("refund_order", "1", {"currency": "USD"}),
        ("refund_order", "2", {}),
        ("cancel_order", "1", {}),
    ],
)
def test_any_change_changes_the_digest(tool: str, version: str, changes: dict[str, object]) -> None:
    """Amount, target, currency, tool or tool version all change the digest."""
    assert args_digest(tool, version, {**ARGS, **changes}) != args_digest("refund_order", "1", ARGS)


def test_digest_is_hex_sha256_of_the_jcs_envelope() -> None:
    """The digest is sha256 over JCS({tool, tool_version, args})."""
    import hashlib

    envelope = {"tool": "t", "tool_version": "1", "args": {"x": 1}}
    assert args_digest("t", "1", {"x": 1}) == hashlib.sha256(canonical_json(envelope)).hexdigest()


@pytest.mark.parametrize("value", [1.5, float("nan"), float("inf"), {"a": [0.1]}])
def test_floats_are_refused(value: object) -> None:
    """Binary fractions never stand for money or counts."""
    with pytest.raises(InvalidArguments):
        canonical_json(value)


def test_resource_set_digest_ignores_order_but_not_membership() -> None:
    """A batch binds the set of resources, not their order."""
    assert resource_set_digest(["b", "a"]) == resource_set_digest(["a", "b"])
    assert resource_set_digest(["a", "b"]) != resource_set_digest(["a", "b", "c"])


def test_fingerprint_resists_separator_injection() -> None:
    """Fields that would collide when joined with a separator do not collide."""
    one = fingerprint("decide", {"a": "x|y", "b": "z"})
    two = fingerprint("decide", {"a": "x", "b": "y|z"})
    assert one != two
