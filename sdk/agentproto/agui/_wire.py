"""AG-UI documents ⇄ typed events: the converter and the parse/dump functions."""

from __future__ import annotations

from typing import Any

from agentproto._core.converter import Unrecognised, WireConverter, python_context
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError
from agentproto.agui import _generated
from agentproto.agui._generated import Event, Message, RunAgentInput

__all__ = ["dump_event", "make_converter", "parse_event", "parse_message", "parse_run_input"]


def make_converter() -> WireConverter:
    """A new converter for the AG-UI classes (cattrs ``structure``/``unstructure`` work too)."""
    return WireConverter(_generated)


_converter = make_converter()
"""The one AG-UI converter of the runtime (built once; every module imports this one)."""
_load_event = _converter.loader(Event)
_load_message = _converter.loader(Message)


def parse_event(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> Event:
    """Parse one decoded JSON event into its typed class.

    Args:
        obj: the event as decoded JSON (a dict).
        diagnostics: ``None`` (default) to reject anything the schema does not
            define; a list to drop unknown properties instead, each reported there
            as an ``unknown-field`` diagnostic with its wire path.

    Raises:
        SchemaError: the event does not match the schema; ``keyword`` and
            ``location`` say what failed and where.
    """
    try:
        # a dict from Python: its free-form values get the depth limit bytes get
        return _load_event(obj, "", python_context(diagnostics))  # type: ignore[no-any-return]
    except Unrecognised as unknown:
        # tolerant parsing of one event cannot drop it: an unknown event type (or an
        # unknown member in a required position) is an error here; the Consumer
        # pipeline drops such events with a diagnostic instead
        raise SchemaError("oneOf", unknown.path, unknown.detail) from None


def parse_message(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> Message:
    """Parse one decoded AG-UI conversation message (any role); see :func:`parse_event`.

    Not to be confused with :func:`agentproto.acp.parse_jsonrpc_message`, which reads
    one ACP JSON-RPC message.
    """
    return _converter.load(obj, Message, diagnostics=diagnostics)  # type: ignore[no-any-return]


def parse_run_input(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> RunAgentInput:
    """Parse a decoded ``RunAgentInput`` request body; see :func:`parse_event`."""
    return _converter.load(obj, RunAgentInput, diagnostics=diagnostics)  # type: ignore[no-any-return]


def dump_event(event: Event) -> dict[str, Any]:
    """The wire JSON (a dict with camelCase keys) of a typed event.

    Absent optional fields are left out; the result parses back to an equal event.
    """
    return _converter.dump(event)  # type: ignore[no-any-return]
