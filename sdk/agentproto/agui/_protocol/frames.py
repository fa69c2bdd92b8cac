"""One AG-UI event as the bytes of one transport frame.

:func:`encode_event_sse` writes ``data: <json>`` and a blank line,
:func:`encode_event_jsonl` ``<json>`` and LF. The JSON is the event's wire form
(:func:`~agentproto.agui.dump_event`) encoded compactly; compact JSON holds no raw
line break, so it is always one ``data`` line. The encoders hold each event to the
schema as they dump it (a field set to a value of the wrong type never reaches the
wire), unless told ``check=False`` for events checked already; they do not check the
protocol's rules of order: events built by :class:`~agentproto.agui.RunProducer`
keep those. Streams of frames, and the HTTP side of choosing a transport, are
:mod:`agentproto.agui._protocol.encoding`. This module is on every sent event's path and is
compiled in the optional mypyc build.
"""

from __future__ import annotations

from typing import Final

from agentproto._core.json.codec import dumps
from agentproto._core.wire.converter import STRICT
from agentproto.agui._generated import Event
from agentproto.agui._protocol.wire import CHECKED, CONVERTER

__all__ = ["encode_event_jsonl", "encode_event_sse"]

_dump: Final = CONVERTER.dump
_checked: Final = CHECKED
"""The checked dumping, under a name not bound by an import: CPython 3.11 looks a method
of an imported name up as a module's attribute, making a bound method on every call."""


def encode_event_sse(event: Event, *, check: bool = True) -> bytes:
    """One event as an SSE frame: ``data: <compact JSON>`` and a blank line.

    Args:
        event: the event.
        check: hold the event to the schema (see :func:`~agentproto.agui.dump_event`);
            ``False`` when it was checked already.

    Raises:
        SchemaError: the event does not match the schema (every problem listed in
            ``problems``), or holds a value that is not JSON (its location named).
    """
    wire = _checked.dump(event, STRICT) if check else _dump(event)
    return b"data: %b\n\n" % dumps(wire)  # one copy, where ``+`` makes two


def encode_event_jsonl(event: Event, *, check: bool = True) -> bytes:
    """One event as a JSON Lines line: compact JSON and LF; see :func:`encode_event_sse`."""
    wire = _checked.dump(event, STRICT) if check else _dump(event)
    return dumps(wire) + b"\n"
