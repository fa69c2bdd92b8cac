"""Opt-in repairs for bugs of known AG-UI peers, seen in their recorded traffic.

Theory of operation. The SDK is strict: a stream that breaks a rule fails, and
that stays the default. Some widely deployed peers break a rule in one known,
harmless-to-undo way; an application that must talk to one of them can opt in to
the repair named after that bug, and to nothing else. Each repair:

* is named (:attr:`StreamQuirk.name`) and says which peer it is for
  (:attr:`StreamQuirk.peer`);
* changes exactly what the bug got wrong, on a copy of the event (never the
  caller's dict), and leaves every other event as it is;
* reports each repair as a :class:`~agentproto.Diagnostic` with code
  :data:`QUIRK_REPAIRED`, ``subject`` the quirk's name, ``path`` the repaired
  member, and (in a :class:`~agentproto.agui.Consumer`) the event's ``index``.

The stream repairs are middleware (``Consumer(middleware=[...])`` or
:class:`~agentproto.agui.EventDecoder`): they see each raw event after the
compatibility boundary and before enforcement, so the repaired event is then
checked like any other. A stream repair object serves one stream (it may keep
state across the stream's events): make one per consumer. The run-input side has
no stream: :func:`repair_dotnet_message_ids` repairs a request body before it is
parsed.

Which events carry the repaired members comes from the generated schema classes,
so a schema that adds ``parentMessageId`` to another event extends the repair.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final, get_args

import attrs

from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic, DiagnosticLog
from agentproto._core.errors import SchemaError, UsageError
from agentproto._core.json.codec import dumps
from agentproto.agui._generated import (
    Event,
    Message,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
)

__all__ = [
    "DOTNET_MISSING_MESSAGE_ID",
    "KNOWN_QUIRKS",
    "QUIRK_REPAIRED",
    "DotnetEmptyParentMessageId",
    "LangGraphRunId",
    "StreamQuirk",
    "repair_dotnet_message_ids",
]

QUIRK_REPAIRED: Final = "quirk-repaired"
"""The code of every diagnostic a repair reports."""


def _wire(cls: type, name: str) -> str:
    """The wire name of field ``name`` of a generated class."""
    wire: str = attrs.fields_dict(cls)[name].metadata["wire"]
    return wire


def _tag(cls: type) -> str:
    """The ``type`` constant of a generated event class."""
    tag: str = attrs.fields_dict(cls)["type"].metadata["const"]
    return tag


class StreamQuirk:
    """A named repair of one peer's bug, applied to each raw event of a stream.

    Subclasses set :attr:`name` and :attr:`peer` and implement :meth:`repair`.
    Until a decoder binds it, its diagnostics go to :attr:`diagnostics`.

    Attributes:
        diagnostics: the repairs reported while no stream was bound.
    """

    name: ClassVar[str]
    """The quirk's stable name (the ``subject`` of its diagnostics)."""
    peer: ClassVar[str]
    """The peer whose bug this repairs."""

    def __init__(self) -> None:
        self.diagnostics: list[Diagnostic] = DiagnosticLog()
        self._report: Callable[[Diagnostic], None] = self.diagnostics.append
        self._bound = False

    def bind_diagnostics(self, report: Callable[[Diagnostic], None]) -> None:
        """Report repairs through ``report`` (called by the decoder it serves).

        Raises:
            UsageError: the quirk already serves a stream (make one per stream).
        """
        if self._bound:
            raise UsageError(
                "quirk.shared",
                f"the {self.name} quirk already serves a stream: make one per Consumer",
            )
        self._bound = True
        self._report = report

    def __call__(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The event, repaired when this quirk applies to it (a middleware hook)."""
        return self.repair(event)

    def repair(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event, or a repaired copy of it."""
        raise NotImplementedError

    def _repaired(self, path: str, message: str) -> None:
        self._report(
            Diagnostic(
                code=QUIRK_REPAIRED,
                message=f"{message} (quirk {self.name}: {self.peer})",
                path=path,
                subject=self.name,
            )
        )


_TYPE = _wire(RunStartedEvent, "type")
_STARTED_ID, _FINISHED_ID = _wire(RunStartedEvent, "run_id"), _wire(RunFinishedEvent, "run_id")
_STARTED, _FINISHED, _ERROR = _tag(RunStartedEvent), _tag(RunFinishedEvent), _tag(RunErrorEvent)


class LangGraphRunId(StreamQuirk):
    """``RUN_FINISHED`` carrying another ``runId`` than its ``RUN_STARTED``.

    LangGraph integrations (``ag-ui-langgraph`` before upstream's fix) finish a run
    with LangGraph's internal run id instead of the protocol's. The lifecycle rule
    makes that fatal; this repair gives the ``RUN_FINISHED`` of the open run the id
    its ``RUN_STARTED`` had. A ``RUN_FINISHED`` while no run is open, or with a
    ``runId`` that is not a string, is left for the verifier to judge.
    """

    name = "langgraph-run-id"
    peer = "LangGraph integrations finish a run with LangGraph's own run id"

    def __init__(self) -> None:
        super().__init__()
        self._open: str | None = None  # runId of the open run

    def repair(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event, with a finishing run's ``runId`` set back to its start's."""
        kind = event.get(_TYPE)
        if kind == _STARTED:
            run_id = event.get(_STARTED_ID)
            self._open = run_id if isinstance(run_id, str) else None
        elif kind == _ERROR:
            self._open = None
        elif kind == _FINISHED:
            started, self._open, run_id = self._open, None, event.get(_FINISHED_ID)
            if started is not None and isinstance(run_id, str) and run_id != started:
                self._repaired(
                    f"/{_FINISHED_ID}",
                    f"{_FINISHED} runId {describe(run_id)} replaced by {describe(started)}, "
                    f"the runId of its {_STARTED}",
                )
                return {**event, _FINISHED_ID: started}
        return event


def _carrying(attribute: str) -> tuple[str, frozenset[str]]:
    """(wire name, event types) of a field the schema gives some events."""
    wires, kinds = set(), set()
    for cls in get_args(Event):
        fields = attrs.fields_dict(cls)
        if attribute in fields:
            wires.add(fields[attribute].metadata["wire"])
            kinds.add(_tag(cls))
    (wire,) = wires
    return wire, frozenset(kinds)


_PARENT, _PARENTED = _carrying("parent_message_id")


class DotnetEmptyParentMessageId(StreamQuirk):
    """``parentMessageId: ""`` sent for "no parent message".

    The .NET AG-UI server (Microsoft Agent Framework's ASP.NET Core hosting) sends an
    empty ``parentMessageId`` on tool calls that have no parent message. Read as
    written, the call is attributed to a message whose id is ``""``; this repair
    removes the empty member, so the call takes the rule for calls without a parent.
    """

    name = "dotnet-empty-parent-message-id"
    peer = "the .NET AG-UI server sends an empty parentMessageId for none"

    def repair(self, event: dict[str, Any]) -> dict[str, Any]:
        """The event, without an empty ``parentMessageId``."""
        if event.get(_PARENT) != "" or event.get(_TYPE) not in _PARENTED:
            return event
        self._repaired(f"/{_PARENT}", f'empty {_PARENT} "" removed (no parent message)')
        return {key: value for key, value in event.items() if key != _PARENT}


KNOWN_QUIRKS: Final[Mapping[str, type[StreamQuirk]]] = {
    quirk.name: quirk for quirk in (LangGraphRunId, DotnetEmptyParentMessageId)
}
"""Every stream repair by name, e.g. for ``[KNOWN_QUIRKS[n]() for n in configured]``."""

DOTNET_MISSING_MESSAGE_ID: Final = "dotnet-missing-message-id"
"""The name of the run-input repair :func:`repair_dotnet_message_ids`."""

_DOTNET_CLIENT = "the .NET AG-UI client sends messages without their id"
_MESSAGES = _wire(RunAgentInput, "messages")
(_ID,) = {_wire(cls, "id") for cls in get_args(Message)}


def repair_dotnet_message_ids(
    document: Mapping[str, Any], *, diagnostics: list[Diagnostic] | None = None
) -> dict[str, Any]:
    """A run input (decoded JSON) whose messages without ``id`` are given one.

    For the .NET AG-UI client (Microsoft Agent Framework), which sends the
    conversation's messages without their ``id``, which the schema requires. Use it
    on the request body before :func:`~agentproto.agui.parse_run_input` (or a
    ``Consumer``'s ``run_input``). Each id made is ``msg-`` and a digest of the
    message's position and content: the same history sent again gets the same ids,
    and none equals an id the input already holds. A message that is not an object,
    or already has an id, is left as it is for parsing to judge.

    Args:
        document: the decoded request body (left unchanged; a copy is returned).
        diagnostics: where each repair is reported (code :data:`QUIRK_REPAIRED`,
            subject ``dotnet-missing-message-id``, path the message's location).

    Returns:
        The run input, repaired (the document itself, copied, when nothing was).
    """
    repaired = dict(document)
    messages = document.get(_MESSAGES)
    if not isinstance(messages, list):
        return repaired
    taken = {m.get(_ID) for m in messages if isinstance(m, dict) and isinstance(m.get(_ID), str)}
    fixed: list[Any] = []
    for position, message in enumerate(messages):
        if isinstance(message, dict) and _ID not in message:
            made = _message_id(position, message, taken)
            taken.add(made)
            message = {_ID: made, **message}
            if diagnostics is not None:
                diagnostics.append(_made_id(position, made))
        fixed.append(message)
    repaired[_MESSAGES] = fixed
    return repaired


def _made_id(position: int, made: str) -> Diagnostic:
    return Diagnostic(
        code=QUIRK_REPAIRED,
        message=f"message without {_ID} given {describe(made)} "
        f"(quirk {DOTNET_MISSING_MESSAGE_ID}: {_DOTNET_CLIENT})",
        path=f"/{_MESSAGES}/{position}",
        subject=DOTNET_MISSING_MESSAGE_ID,
    )


def _message_id(position: int, message: dict[str, Any], taken: set[Any]) -> str:
    """A stable id for the message at ``position``, unlike every id in ``taken``."""
    try:
        content = dumps(message)
    except SchemaError:  # not JSON: parsing will say where; the position keeps it unique
        content = b""
    digest = hashlib.sha256(b"%d:" % position + content).hexdigest()
    made, extra = f"msg-{digest[:16]}", 0
    while made in taken:
        extra += 1
        made = f"msg-{digest[:16]}-{extra}"
    return made
