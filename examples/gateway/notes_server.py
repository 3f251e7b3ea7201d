"""A tiny MCP server (stdio) to try the gateway with: notes as files in one directory.

    signoff serve --demo --policy examples/gateway/policy.toml \
        --upstream "notes=python examples/gateway/notes_server.py ./notes"

It is any MCP server's stand-in: signoff knows nothing about it but its tool list.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else "notes").resolve()
server = MCPServer("notes")


def _file(name: str) -> Path:
    path = (ROOT / name).resolve()
    if path.parent != ROOT or not name.endswith(".txt"):
        raise ValueError("a note is <name>.txt directly in the notes directory")
    return path


@server.tool()
def read_note(name: str) -> str:
    """Read a note."""
    return _file(name).read_text(encoding="utf-8")


@server.tool()
def list_notes() -> list[str]:
    """List the notes."""
    return sorted(p.name for p in ROOT.glob("*.txt"))


@server.tool()
def write_note(name: str, text: str) -> str:
    """Create or replace a note."""
    _file(name).write_text(text, encoding="utf-8")
    return f"wrote {name}"


if __name__ == "__main__":
    ROOT.mkdir(parents=True, exist_ok=True)
    server.run("stdio")
