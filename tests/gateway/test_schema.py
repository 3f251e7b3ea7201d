"""Upstream input schemas made strict (OpenAI strict rules), and arguments checked against them."""

from __future__ import annotations

from typing import Any

import pytest

from signoff.exceptions import InvalidArguments
from signoff.gateway._schema import ArgumentChecker, NotStrictable, schema_digest, strict_schema

EDIT_FILE: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
                "required": ["oldText", "newText"],
            },
        },
        "dryRun": {"default": False, "type": "boolean"},
        "sortBy": {"type": "string", "enum": ["name", "size"]},
    },
    "required": ["path", "edits"],
}


def test_every_object_is_closed_and_optional_properties_are_nullable() -> None:
    """additionalProperties false everywhere, all required, optional ones nullable."""
    strict = strict_schema(EDIT_FILE)
    assert strict["additionalProperties"] is False
    assert strict["required"] == ["path", "edits", "dryRun", "sortBy"]
    assert strict["properties"]["dryRun"] == {"type": ["boolean", "null"]}
    assert strict["properties"]["sortBy"]["enum"] == ["name", "size", None]
    item = strict["properties"]["edits"]["items"]
    assert item["additionalProperties"] is False and item["required"] == ["oldText", "newText"]
    assert EDIT_FILE["properties"]["dryRun"] == {"default": False, "type": "boolean"}  # untouched


def test_arguments_are_checked_strictly_and_nulls_are_left_out_upstream() -> None:
    """Unknown fields, missing ones, bools for strings, floats are refused; null means absent."""
    checker = ArgumentChecker("fs_edit_file", EDIT_FILE, strict_schema(EDIT_FILE))
    good = {
        "path": "/a",
        "edits": [{"oldText": "x", "newText": "y"}],
        "dryRun": None,
        "sortBy": None,
    }
    assert checker.check(good) == good
    assert checker.upstream_arguments(good) == {
        "path": "/a",
        "edits": [{"oldText": "x", "newText": "y"}],
    }
    for bad in (
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "dryRun"},
        {**good, "path": True},
        {**good, "edits": [{"oldText": "x", "newText": "y", "more": "z"}]},
    ):
        with pytest.raises(InvalidArguments) as refused:
            checker.check(bad)
        assert "secret" not in str(refused.value.details)
    with pytest.raises(InvalidArguments, match="floating-point"):
        ArgumentChecker(
            "t",
            {"type": "object", "properties": {"n": {"type": "number"}}},
            strict_schema({"type": "object", "properties": {"n": {"type": "number"}}}),
        ).check({"n": 1.5})
    with pytest.raises(InvalidArguments, match="not JSON"):
        checker.check("{nope")


def test_the_rejected_value_is_never_echoed() -> None:
    """Errors name the field and the rule, not what the caller sent."""
    checker = ArgumentChecker("fs_edit_file", EDIT_FILE, strict_schema(EDIT_FILE))
    with pytest.raises(InvalidArguments) as refused:
        checker.check({"path": 42, "edits": [], "dryRun": None, "sortBy": "my-secret-order"})
    assert "my-secret-order" not in str(refused.value.details) and "42" not in str(
        refused.value.details
    )
    assert {tuple(e["loc"]) for e in refused.value.details["errors"]} == {("path",), ("sortBy",)}


@pytest.mark.parametrize(
    "schema",
    [
        {
            "type": "object",
            "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}},
        },
        {"type": "object", "properties": {"m": {"type": "object"}}},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "array"},
        {"type": "object", "properties": {"p": {"type": "no-such-type"}}},
    ],
)
def test_schemas_that_cannot_be_closed_are_refused(schema: dict[str, Any]) -> None:
    """A free-form map or an invalid schema: the tool is left out rather than exposed loosely."""
    with pytest.raises(NotStrictable):
        strict_schema(schema)


def test_the_digest_is_of_the_upstream_schema_and_changes_with_it() -> None:
    """Key order does not matter; any change of the schema does."""
    reordered = dict(reversed(list(EDIT_FILE.items())))
    assert schema_digest(reordered) == schema_digest(EDIT_FILE)
    changed = {**EDIT_FILE, "required": ["path"]}
    assert schema_digest(changed) != schema_digest(EDIT_FILE)
