"""AG-UI documents ⇄ typed events: the converter and the parse/dump functions."""

from __future__ import annotations

from typing import Any

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError
from agentproto._core.json.codec import dumps
from agentproto._core.wire.checkeddump import CheckedDump
from agentproto._core.wire.converter import (
    STRICT,
    Context,
    Unrecognised,
    WireConverter,
    python_context,
)
from agentproto._core.wire.loaders import Loader, compiled_module
from agentproto._core.wire.problems import with_all_problems
from agentproto.agui import _generated, _generated_loaders
from agentproto.agui._generated import Event, Message, RunAgentInput
from agentproto.agui._protocol.kinds import EVENT_CLASSES

__all__ = ["dump_event", "make_converter", "parse_event", "parse_message", "parse_run_input"]


_NATIVE = compiled_module("agentproto.agui._generated_native")
"""The compiled native loaders and checked dumpers, in the compiled build (looked for
once)."""


def make_converter() -> WireConverter:
    """A new converter for the AG-UI classes (cattrs ``structure``/``unstructure`` work too);
    in the compiled build it loads through the compiled native loaders."""
    return WireConverter(_generated, _generated_loaders, _NATIVE)


CONVERTER = make_converter()
"""The one AG-UI converter of the runtime (built once; every module imports this one)."""
load_event = CONVERTER.loader(Event)
_load_message = CONVERTER.loader(Message)
EVENT_LOADERS: dict[str, Loader] = {
    kind: CONVERTER.loader(cls) for kind, cls in EVENT_CLASSES.items()
}
"""The loader of each event type's class (what :data:`load_event` dispatches to)."""
EVENT_NUMBER_MEMBERS: dict[str, tuple[int, tuple[str, ...] | None]] = {
    kind: _generated_loaders.NUMBER_MEMBERS[cls] for kind, cls in EVENT_CLASSES.items()
}
"""For each event type, where an event its loader accepted can hold a number
(:meth:`~agentproto._core.wire.converter.WireConverter.number_members`, written out by the
code generator)."""
_PYTHON_CONTEXT = python_context(None)


def load_as(value: Any, tp: Any) -> Any:
    """``value`` (typed objects, wire JSON or a mix) checked and built as ``tp``."""
    return CONVERTER.load(CONVERTER.dump(value), tp)


def json_text(value: Any) -> str:
    """Tool arguments or a result as text: a string as is, anything else as compact JSON."""
    return value if isinstance(value, str) else dumps(value).decode("utf-8")


def parse_event(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> Event:
    """Parse one decoded JSON event into its typed class.

    Args:
        obj: the event as decoded JSON (a dict).
        diagnostics: ``None`` (default) to reject anything the schema does not
            define; a list to drop unknown properties instead, each reported there
            as an ``unknown-field`` diagnostic with its wire path.

    Raises:
        SchemaError: the event does not match the schema; ``keyword`` and
            ``location`` say what failed first and where, ``problems`` lists
            every problem found.
    """
    # a dict from Python: its free-form values get the depth limit bytes get
    ctx = python_context(diagnostics)
    try:
        return load_event(obj, "", ctx)  # type: ignore[no-any-return]
    except Unrecognised as unknown:
        # tolerant parsing of one event cannot drop it: an unknown event type (or an
        # unknown member in a required position) is an error here; the Consumer
        # pipeline drops such events with a diagnostic instead
        raise unknown.as_error() from None
    except SchemaError as exc:
        raise with_all_problems(CONVERTER, exc, Event, obj, ctx) from None


def parse_message(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> Message:
    """Parse one decoded AG-UI conversation message (any role); see :func:`parse_event`.

    Not to be confused with :func:`agentproto.acp.parse_jsonrpc_message`, which reads
    one ACP JSON-RPC message.
    """
    return CONVERTER.load(obj, Message, diagnostics=diagnostics)  # type: ignore[no-any-return]


def parse_run_input(obj: Any, *, diagnostics: list[Diagnostic] | None = None) -> RunAgentInput:
    """Parse a decoded ``RunAgentInput`` request body; see :func:`parse_event`."""
    return CONVERTER.load(obj, RunAgentInput, diagnostics=diagnostics)  # type: ignore[no-any-return]


def dump_event(event: Event, *, check: bool = True) -> dict[str, Any]:
    """The wire JSON (a dict with camelCase keys) of a typed event.

    Absent optional fields are left out; the result parses back to an equal event.

    Args:
        event: the event.
        check: hold the result to the schema, as :func:`parse_event` holds what it
            reads (a field set to a value of the wrong type would otherwise go out
            as it is); ``False`` when the event was checked already (one built by
            :class:`~agentproto.agui.RunProducer`, or by :func:`parse_event`).

    Raises:
        SchemaError: with ``check``, the event does not match the schema; its
            ``problems`` list every problem, each at its wire location.
    """
    if check:
        return CHECKED.dump(event, _PYTHON_CONTEXT)
    wire: dict[str, Any] = CONVERTER.dump(event)
    return wire


def _dump_slow(event: Event, ctx: Context) -> dict[str, Any]:
    """The wire JSON of ``event`` dumped, then held to the schema by :func:`check_wire`."""
    wire: dict[str, Any] = CONVERTER.dump(event)
    check_wire(wire, ctx)
    return wire


CHECKED = CheckedDump(
    {cls: (_NATIVE or _generated_loaders).CHECKED_DUMPERS[cls] for cls in EVENT_CLASSES.values()},
    _dump_slow,
)
"""The wire JSON of an event held to the schema, ``CHECKED.dump(event, ctx)``: what
:func:`check_wire` of its dump would accept, else the error it raises. The quick way
(the compiled checked dumpers in the compiled build) is taken for the members of
``Event`` only: an object of another class is no event, which the slow way reports."""


def check_wire(wire: dict[str, Any], ctx: Context = STRICT) -> None:
    """Check the wire JSON of a typed event against the schema (``ctx``: strict by
    default, where the caller encodes ``wire`` next, which finds values that are not
    JSON; :func:`python_context` to look for them here).

    Raises:
        SchemaError: the event does not match the schema (every problem listed).
    """
    try:
        load_event(wire, "", ctx)
    except SchemaError as exc:
        raise with_all_problems(CONVERTER, exc, Event, wire, ctx) from None
