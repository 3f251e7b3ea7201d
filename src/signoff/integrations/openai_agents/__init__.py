"""signoff for the OpenAI Agents SDK (``pip install 'signoff[openai-agents]'``).

Two ways to give an ``agents.Agent`` write tools that a person confirms:

- :func:`signoff_tools` — the model requests a confirmation, later reads the
  status and executes with the token (signoff's own three tools);
- :class:`SignoffApprovals` — the model calls the write tool itself; the SDK's
  ``needs_approval`` interruption becomes a signoff proposal, and only a
  signoff decision releases the run (:meth:`SignoffApprovals.release`).
"""

from signoff.integrations.openai_agents._approval import Pending, SignoffApprovals
from signoff.integrations.openai_agents._identity import PrincipalSource
from signoff.integrations.openai_agents._tools import signoff_tools

__all__ = ["Pending", "PrincipalSource", "SignoffApprovals", "signoff_tools"]
