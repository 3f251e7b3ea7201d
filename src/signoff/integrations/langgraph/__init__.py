"""signoff for LangGraph and LangChain (``pip install 'signoff[langgraph]'``).

- :class:`SignoffWrite` — a graph step whose ``interrupt()`` payload is the
  proposal and whose resume runs the write only once a person confirmed it in
  signoff; durable with any checkpointer (SQLite, PostgreSQL savers).
- :func:`signoff_langchain_tools` — request / execute / status as LangChain tools.

``langchain-mcp-adapters`` (0.3.x) requires ``mcp<2`` and cannot be installed
beside signoff (``mcp>=2.3``); use these tools, or an MCP client of the 2.x SDK.
"""

from signoff.integrations.langgraph._tools import signoff_langchain_tools
from signoff.integrations.langgraph._write import SignoffWrite

__all__ = ["SignoffWrite", "signoff_langchain_tools"]
