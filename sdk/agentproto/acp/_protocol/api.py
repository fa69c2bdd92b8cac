"""Where each ACP v2 method lives in the typed API: the agent's handlers, the client's calls.

Theory of operation
-------------------
The method table (:func:`~agentproto.acp._protocol.methods.method_table`) says which
methods exist, who handles each one and its params and result types; this
module says where each one appears in *our* API: the name of the
:class:`~agentproto.acp.Agent` method that handles an agent method, the name of
the :class:`~agentproto.acp.AcpClient` call that sends it, and the name of the
client-side callback for a client method. A method of the table with no entry
here has no typed API yet, and ``tests/acp/test_lifecycle_methods.py`` fails
until it has one.

Stability is the generated table's (:attr:`~agentproto.acp._protocol.methods.MethodSpec.stable`,
read off the published stable schema): a method it does not mark stable is on
the API only behind ``unstable=True`` (:func:`is_unstable`).
"""

from __future__ import annotations

from typing import Final

import attrs

from agentproto.acp._protocol.methods import MethodSpec

__all__ = ["AGENT_METHODS", "CLIENT_METHODS", "ApiEntry", "is_unstable"]


@attrs.frozen
class ApiEntry:
    """Where one method lives in the API.

    Attributes:
        name: the Python name (an :class:`~agentproto.acp.Agent` method or an
            :class:`~agentproto.acp.AcpClient` call for agent methods; a
            client callback for client methods).
    """

    name: str


AGENT_METHODS: Final[dict[str, ApiEntry]] = {
    "initialize": ApiEntry("initialize"),
    "auth/login": ApiEntry("login"),
    "auth/logout": ApiEntry("logout"),
    "session/new": ApiEntry("new_session"),
    "session/resume": ApiEntry("resume_session"),
    "session/close": ApiEntry("close_session"),
    "session/list": ApiEntry("list_sessions"),
    "session/delete": ApiEntry("delete_session"),
    "session/set_config_option": ApiEntry("set_config_option"),
    "session/prompt": ApiEntry("prompt"),
    "session/cancel": ApiEntry("cancel"),
    "tool_call/cancel": ApiEntry("cancel_tool_call"),
    "terminal/cancel": ApiEntry("cancel_terminal"),
    "auth/status": ApiEntry("auth_status"),
    "session/fork": ApiEntry("fork_session"),
    "session/status": ApiEntry("session_status"),
    "session/archive": ApiEntry("archive_session"),
    "session/unarchive": ApiEntry("unarchive_session"),
    "session/set_title": ApiEntry("set_session_title"),
    "providers/list": ApiEntry("list_providers"),
    "providers/set": ApiEntry("set_provider"),
    "providers/disable": ApiEntry("disable_provider"),
    "mcp/message": ApiEntry("mcp_message"),
}
"""Agent-side methods: the :class:`~agentproto.acp.Agent` method that handles each
one, which is also the name of the :class:`~agentproto.acp.AcpClient` call (on
``client.unstable`` for an unstable one) that sends it."""

CLIENT_METHODS: Final[dict[str, ApiEntry]] = {
    "session/update": ApiEntry("on_update"),
    "session/request_permission": ApiEntry("on_permission"),
    "elicitation/create": ApiEntry("on_elicitation"),
    "elicitation/complete": ApiEntry("on_elicitation_complete"),
    "auth/status_update": ApiEntry("on_auth_status"),
    "mcp/message": ApiEntry("on_mcp_message"),
}
"""Client-side methods: the :class:`~agentproto.acp.ClientHandlers` callback the
application supplies for each one (``session/update`` is folded by the client
itself and then reported to ``on_update``); the agent's call that sends each one
is on :class:`~agentproto.acp.AgentSession` or
:class:`~agentproto.acp.AgentConnection`."""


def is_unstable(spec: MethodSpec) -> bool:
    """Whether ``spec`` needs the unstable opt-in (the stable schema lacks its method)."""
    return not spec.stable
