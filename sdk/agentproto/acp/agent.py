"""Writing an ACP v2 agent: the :class:`Agent` an author subclasses, and :class:`AgentSession`."""

from agentproto._core.exports import export
from agentproto.acp._agent.agent import (
    Agent,
    AgentSession,
)

__all__ = [
    "Agent",
    "AgentSession",
]

export(__name__, globals(), __all__)
