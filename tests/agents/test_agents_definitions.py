"""What a model sees: one request and one execute tool per write tool, strict OpenAI schemas."""

from __future__ import annotations

import copy
import re
from typing import Annotated, Any

import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import TypeAdapter, WithJsonSchema

import signoff.agents
from signoff.agents import (
    REQUEST_DESCRIPTION_PREFIX,
    AgentTools,
    OpenAIDispatcher,
    ToolKind,
    openai_tools,
)
from signoff.exceptions import CatalogError
from tests.conftest import World

NAMES = [
    "request_refund_order_confirmation",
    "execute_confirmed_refund_order",
    "request_add_order_note_confirmation",
    "execute_confirmed_add_order_note",
    "request_suspend_account_confirmation",
    "execute_confirmed_suspend_account",
    "get_proposal_status",
    "get_mandate_status",
]


def _definitions(dispatcher: OpenAIDispatcher, api: Any = "chat") -> list[dict[str, Any]]:
    return dispatcher.definitions(api=api)


def test_every_write_tool_gets_a_request_and_an_execute_tool(
    dispatcher: OpenAIDispatcher,
) -> None:
    """The catalog's two write tools become four tools, plus get_proposal_status."""
    assert [d["function"]["name"] for d in _definitions(dispatcher)] == NAMES


def test_request_tools_say_they_do_not_perform_the_action(dispatcher: OpenAIDispatcher) -> None:
    """The description starts with the sentence a model must not misread."""
    for tool in dispatcher.tools.definitions:
        if tool.kind is ToolKind.REQUEST:
            assert tool.description.startswith(
                "Creates a confirmation request; does not perform the action"
            )
            assert REQUEST_DESCRIPTION_PREFIX in tool.description
        else:
            assert "Creates a confirmation request" not in tool.description


def test_request_tool_takes_the_catalog_schema_and_the_two_reserved_ids(
    world: World, dispatcher: OpenAIDispatcher
) -> None:
    """The model fills in the tool's own arguments, untouched, plus two nullable reserved ids
    (a mandate, a superseded proposal); nothing else is added or loosened."""
    parameters = _definitions(dispatcher)[0]["function"]["parameters"]
    own = world.gate.catalog.schema("refund_order")
    reserved = ["signoff_mandate_id", "signoff_supersedes"]
    assert parameters["required"] == [*own["required"], *reserved]
    assert {k: v for k, v in parameters["properties"].items() if k not in reserved} == (
        own["properties"]
    )
    assert parameters["additionalProperties"] is False
    for name in reserved:
        assert {"type": "null"} in parameters["properties"][name]["anyOf"]


def test_execute_tool_takes_only_proposal_and_token(dispatcher: OpenAIDispatcher) -> None:
    """Confirmed arguments are read from the proposal, so the model cannot send any."""
    execute = _definitions(dispatcher)[1]["function"]["parameters"]
    assert execute["required"] == ["proposal_id", "confirmation_token"]
    assert set(execute["properties"]) == {"proposal_id", "confirmation_token"}


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_the_openai_sdk_strict_helper_accepts_every_definition_unchanged(
    dispatcher: OpenAIDispatcher, api: str
) -> None:
    """openai's own to_strict_json_schema has nothing left to change in any parameters."""
    for definition in _definitions(dispatcher, api):
        function = definition["function"] if api == "chat" else definition
        assert function["strict"] is True
        schema = function["parameters"]
        adapter: TypeAdapter[Any] = TypeAdapter(
            Annotated[dict[str, Any], WithJsonSchema(copy.deepcopy(schema))]
        )
        assert to_strict_json_schema(adapter) == schema, function["name"]


def test_every_object_is_closed_and_every_property_required(
    dispatcher: OpenAIDispatcher,
) -> None:
    """Strict mode by hand: additionalProperties false, all required, optional ones nullable."""

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "properties" in node:
                assert node["additionalProperties"] is False
                assert node["required"] == list(node["properties"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for definition in _definitions(dispatcher):
        walk(definition["function"]["parameters"])
    currency = _definitions(dispatcher)[0]["function"]["parameters"]["properties"]["currency"]
    assert {"type": "null"} in currency["anyOf"]


def test_function_names_fit_openai_rules(dispatcher: OpenAIDispatcher) -> None:
    """Names are 1..64 characters of letters, digits, _ and -."""
    for definition in _definitions(dispatcher):
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", definition["function"]["name"])


def test_responses_api_shape_is_flat(dispatcher: OpenAIDispatcher) -> None:
    """The Responses API takes the function fields at the top level."""
    first = _definitions(dispatcher, "responses")[0]
    assert first["type"] == "function"
    assert first["name"] == NAMES[0]
    assert "function" not in first


def test_a_tool_name_too_long_for_openai_is_refused_when_declared(world: World) -> None:
    """A write tool whose agent names would exceed 64 characters fails loudly, not at call time."""
    tool = world.gate.catalog.get("add_order_note")
    long_tool = type("LongTool", (type(tool),), {"name": "x" * 60})(tool.shop)  # type: ignore[attr-defined]
    world.gate.catalog.register(long_tool)
    with pytest.raises(CatalogError, match="64"):
        AgentTools(world.gate)


def test_annotation_hints_follow_the_side_effect_level(dispatcher: OpenAIDispatcher) -> None:
    """Request tools only record; execute tools are destructive, external ones open-world."""
    by_name = {t.name: t for t in dispatcher.tools.definitions}
    request = by_name["request_refund_order_confirmation"]
    assert (request.read_only, request.destructive, request.idempotent) == (False, False, False)
    refund = by_name["execute_confirmed_refund_order"]
    assert (refund.read_only, refund.destructive, refund.open_world) == (False, True, True)
    note = by_name["execute_confirmed_add_order_note"]
    assert (note.destructive, note.open_world, note.idempotent) == (True, False, True)
    assert by_name["get_proposal_status"].read_only is True


def test_openai_tools_accepts_definitions_or_a_toolset(dispatcher: OpenAIDispatcher) -> None:
    """The same definitions come out of either entry point."""
    assert openai_tools(dispatcher.tools) == openai_tools(dispatcher.tools.definitions)


def test_public_surface_is_pinned() -> None:
    """Adding or removing a public name of signoff.agents is a conscious change."""
    assert set(signoff.agents.__all__) == {
        "DEFAULT_PUBLIC_URL", "REQUEST_DESCRIPTION_PREFIX", "STATUS_TOOL", "AgentTool",
        "AgentTools", "ConfirmationPages", "ExecuteArgs", "OpenAIDispatcher", "StatusArgs",
        "ToolKind", "ToolOutput", "agent_tools", "execute_name", "openai_tool", "openai_tools",
        "refusal_payload", "request_name",
    }  # fmt: skip
