"""AG-UI: agent ↔ user-interface events.

The typed layer (every schema class) is :mod:`agentproto.agui.schema`; this package
exports the hand-written API.
"""

from agentproto.agui import schema
from agentproto.agui._generated import Event, Message
from agentproto.agui._wire import (
    dump_event,
    make_converter,
    parse_event,
    parse_message,
    parse_run_input,
)

__all__ = [
    "Event",
    "Message",
    "dump_event",
    "make_converter",
    "parse_event",
    "parse_message",
    "parse_run_input",
    "schema",
]
