"""Declaring tools: strict schemas and strict argument parsing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from signoff import Catalog, StrictArgs, strict_json_schema
from signoff.demo import DemoShop, RefundArgs, RefundOrder
from signoff.exceptions import CatalogError, InvalidArguments, UnknownTool
from tests.conftest import REFUND


def test_refund_schema_is_strict() -> None:
    """Every property required, optional ones nullable, no additional properties."""
    schema = strict_json_schema(RefundArgs)
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(schema["properties"]) == set(REFUND)
    currency = schema["properties"]["currency"]
    assert {"type": "null"} in currency["anyOf"]


@pytest.mark.parametrize("default", [3, None])
def test_an_argument_with_a_default_is_refused(default: int | None) -> None:
    """Strict mode publishes every argument as required: a default would parse differently."""

    class Loose(StrictArgs):
        count: int | None = default

    with pytest.raises(CatalogError, match=r"Loose.count has a default.*`count: X \| None`"):
        strict_json_schema(Loose)


@pytest.fixture
def tool(tmp_path: Any) -> RefundOrder:
    return RefundOrder(DemoShop(str(tmp_path / "shop.db")))


@pytest.mark.parametrize(
    "bad",
    [
        {**REFUND, "amount_minor": True},
        {**REFUND, "amount_minor": 199.0},
        {**REFUND, "amount_minor": "19900"},
        {**REFUND, "amount_minor": -1},
        {**REFUND, "note": "unknown field"},
        {k: v for k, v in REFUND.items() if k != "reason"},
        {**REFUND, "order_id": "1001; DROP TABLE orders"},
    ],
    ids=["bool", "float", "string", "negative", "unknown-field", "missing-field", "pattern"],
)
def test_parse_refuses(tool: RefundOrder, bad: dict[str, Any]) -> None:
    """Bool, float, string or negative money, unknown and missing fields are refused."""
    with pytest.raises(InvalidArguments) as caught:
        tool.parse(bad)
    assert caught.value.details["errors"]


@pytest.mark.parametrize("raw", ['{"amount_minor": NaN}', '{"amount_minor": Infinity}'])
def test_parse_refuses_nan_and_infinity_json(tool: RefundOrder, raw: str) -> None:
    """NaN and infinity are not money, even when a JSON parser would accept them."""
    with pytest.raises(InvalidArguments):
        tool.parse(raw.replace("}", ', "order_id": "ord_1", "currency": "CNY", "reason": null}'))


def test_parse_refuses_python_nan(tool: RefundOrder) -> None:
    """A float NaN in a mapping is refused before validation."""
    with pytest.raises(InvalidArguments):
        tool.parse({**REFUND, "amount_minor": float("nan")})


def test_parse_accepts_json_text(tool: RefundOrder) -> None:
    """Arguments arrive as the JSON string a model produced."""
    assert tool.parse(json.dumps(REFUND)).amount_minor == 19900


def test_catalog_checks_declarations(tool: RefundOrder) -> None:
    """Duplicate names and unknown tools are refused with typed errors."""
    catalog = Catalog([tool])
    with pytest.raises(CatalogError):
        catalog.register(tool)
    with pytest.raises(UnknownTool):
        catalog.get("delete_everything")
    assert catalog.schema("refund_order")["additionalProperties"] is False


def test_catalog_requires_explicit_side_effect(tool: RefundOrder) -> None:
    """The side-effect level is declared, never inferred from the name."""

    class Nameless(RefundOrder):
        name = "refund_twice"
        side_effect = "external"  # type: ignore[assignment]

    with pytest.raises(CatalogError, match="side_effect"):
        Catalog([Nameless(tool.shop)])
