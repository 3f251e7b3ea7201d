"""An upstream write tool whose arguments use the request tools' reserved prefix is left out."""

from __future__ import annotations

import mcp_types as types

from signoff.gateway._listed import classify
from signoff.gateway._policy import UpstreamPolicy


def _tool(name: str, *properties: str) -> types.Tool:
    schema = {
        "type": "object",
        "properties": {p: {"type": "string"} for p in properties},
        "required": list(properties),
    }
    return types.Tool(name=name, input_schema=schema)


def test_a_signoff_prefixed_argument_is_skipped_with_the_reason() -> None:
    """write_file is offered; put_thing (signoff_supersedes) is skipped, naming the argument."""
    tools = [_tool("write_file", "path"), _tool("put_thing", "signoff_supersedes")]
    listed, skipped = classify("up", tools, UpstreamPolicy("up", "editor"))
    assert [t.name for t in listed] == ["write_file"]
    ((left_out),) = skipped
    assert left_out.name == "put_thing" and "signoff_supersedes" in left_out.reason
