"""Adapters for agent frameworks, built on the public API only (``signoff``, ``signoff.agents``).

- :mod:`signoff.integrations.openai_agents` — the OpenAI Agents SDK
  (``pip install 'signoff[openai-agents]'``)
- :mod:`signoff.integrations.langgraph` — LangGraph and LangChain tools
  (``pip install 'signoff[langgraph]'``)
"""
