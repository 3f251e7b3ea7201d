"""A stdio MCP server that tells which environment variables it was started with (names only)."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

server = MCPServer("env")


@server.tool()
def variables() -> list[str]:
    """The names of this process's environment variables."""
    return sorted(os.environ)


if __name__ == "__main__":
    server.run("stdio")
