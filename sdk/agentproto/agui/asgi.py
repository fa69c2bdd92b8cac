"""Serving AG-UI events over HTTP: framework-free ASGI applications.

The code lives in :mod:`agentproto.agui._serve`; this module is its public face.
"""

from agentproto._core.exports import export
from agentproto.agui._serve.app import (
    DEFAULT_MAX_BODY_BYTES,
    AgentHandler,
    ASGIApp,
    ASGIMessage,
    Events,
    EventStreamResponse,
    Receive,
    Scope,
    Send,
    agent_app,
    run_events,
)

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "ASGIApp",
    "ASGIMessage",
    "AgentHandler",
    "EventStreamResponse",
    "Events",
    "Receive",
    "Scope",
    "Send",
    "agent_app",
    "run_events",
]

export(__name__, globals(), __all__)
