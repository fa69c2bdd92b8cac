"""Stages 1-4 of the AG-UI processing model: bytes or JSON in, enforced typed events out.

Theory of operation. Every incoming event takes the same path whatever the
transport (SSE, JSON Lines, in-process dicts, a replayed recording):

1. **framing** (bytes only): SSE or JSON Lines into JSON documents;
2. **compatibility boundary** (:mod:`agentproto.agui._protocol.compat`): version check,
   retired shapes;
3. **middleware**: caller hooks see the raw material before anything is stripped;
4. **enforcement**: the document becomes a typed event; unknown event types,
   properties and union members are stripped with diagnostics (each carrying the
   0-based index of its input event), a known field holding a malformed value is
   fatal (:class:`~agentproto.SchemaError`).

:class:`EventDecoder` stops there; :class:`~agentproto.agui.Consumer` adds chunk
expansion, verification and the reducer by giving the decoder its next stage.

The common case takes a shorter way through stages 2-4 (:meth:`EventDecoder._enforce`):
an event of a type the boundary never changes, without the one field it looks at
in every event, with no middleware, goes straight to the generated loader of its
type; anything else, and any event that loader refuses, takes the general way,
which reports it exactly as before.

Errors never lose what came before them: when a problem is found after some
events of a chunk were decoded, those events are handed on and the error is
raised by the next call. After a fatal error every call raises.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import attrs
import orjson

from agentproto._core.describe import describe
from agentproto._core.diagnostics import DEFAULT_MAX_DIAGNOSTICS, Diagnostic, DiagnosticLog
from agentproto._core.errors import (
    AgentProtoError,
    DecodeError,
    SchemaError,
    UsageError,
    as_sdk_error,
    chained,
)
from agentproto._core.json.codec import (
    DEFAULT_MAX_DEPTH,
    check_value,
    loads,
    may_hold_rounded_int,
)
from agentproto._core.json.lines import JSONLinesDecoder
from agentproto._core.sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder, SSEEvent
from agentproto._core.wire.converter import Context, Unrecognised
from agentproto._core.wire.loaders import Loader
from agentproto.agui._generated import Event
from agentproto.agui._protocol.compat import CompatibilityBoundary
from agentproto.agui._protocol.encoding import Transport
from agentproto.agui._protocol.wire import EVENT_LOADERS, EVENT_NUMBER_MEMBERS, load_event

__all__ = ["EventDecoder", "Middleware"]

Middleware = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""A hook on raw events: return the (possibly changed) event, or None to drop it.

A hook with a ``bind_diagnostics(report)`` method (the compatibility repairs of
:mod:`agentproto.agui.quirks`) is given, once, the function that records a
diagnostic against the event being processed."""


# An event type's loader, the member count at which an event it accepted holds no number
# (-1: none) and the members of such an event that can hold one (None: any can).
_Direct = tuple[Loader, int, tuple[str, ...] | None]

# What follows enforcement: (typed event, its diagnostics so far, delivered events).
NextStage = Callable[[Event, list[Diagnostic], list[Event]], None]


def _deliver(event: Event, found: list[Diagnostic], delivered: list[Event]) -> None:
    delivered.append(event)


def _direct_table(kinds: AbstractSet[str], key: str | None) -> dict[str, _Direct]:
    """The event types that need nothing before their loader when it accepts them (those
    not in ``kinds``, the boundary's types less those it changes only where the loader
    refuses: see :meth:`EventDecoder._enforce`), each with where an event it accepted can
    hold a number. The boundary's every-event field ``key`` is in no event taken this way."""
    table: dict[str, _Direct] = {}
    for kind, load in EVENT_LOADERS.items():
        if kind not in kinds:
            size, members = EVENT_NUMBER_MEMBERS[kind]
            if members is not None:
                members = tuple(name for name in members if name != key)
            table[kind] = (load, size, members)
    return table


def _members_may_hold_rounded_int(event: dict[str, Any], members: tuple[str, ...] | None) -> bool:
    """:func:`may_hold_rounded_int` for an event whose other members hold no number."""
    if members is None:
        return may_hold_rounded_int(event)
    for name in members:
        value = event.get(name)
        if value is not None and not isinstance(value, str) and may_hold_rounded_int(value):
            return True
    return False


class EventDecoder:
    """Decode and enforce AG-UI events: framing, boundary, middleware, enforcement.

    Args:
        protocol_version: the ``MAJOR.MINOR`` this client speaks.
        peer_version: the newest version an old peer speaks, when pinned to one.
        middleware: hooks applied in order to each raw event after the boundary.
        transport: framing of :meth:`feed_bytes`: ``"sse"`` or ``"jsonl"``.
        max_event_bytes: largest single event accepted from bytes.
        max_depth: deepest JSON nesting accepted.
        max_diagnostics: most diagnostics kept in :attr:`diagnostics`; past it
            one ``diagnostics-limit`` entry counts the rest (``None``: keep all).
        next_stage: for composition (the Consumer's later stages): called with
            each enforced event, its diagnostics so far and the list of delivered
            events; by default the event is delivered as it is.
        on_failure: called with every fatal error, whichever stage raised it.

    Attributes:
        diagnostics: every tolerated problem so far, in order, each with the
            0-based ``index`` of the input event that caused it.
    """

    def __init__(
        self,
        *,
        protocol_version: str = "1.0",
        peer_version: str | None = None,
        middleware: Sequence[Middleware] = (),
        transport: Transport = "sse",
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_diagnostics: int | None = DEFAULT_MAX_DIAGNOSTICS,
        next_stage: NextStage | None = None,
        on_failure: Callable[[AgentProtoError], None] | None = None,
    ) -> None:
        if transport not in ("sse", "jsonl"):
            raise UsageError(
                "decoder.transport", f"transport must be 'sse' or 'jsonl': {transport!r}"
            )
        # kept typed as the log too: compiled code then calls its extend (the limit), not list's
        self._log = DiagnosticLog(max_diagnostics)
        self.diagnostics: list[Diagnostic] = self._log
        self._boundary = CompatibilityBoundary(
            protocol_version=protocol_version, peer_version=peer_version
        )
        self._key = self._boundary.key  # a field that sends any event to the boundary
        self._middleware = tuple(middleware)
        kinds = self._boundary.kinds
        self._direct: dict[str, _Direct] = (
            {}
            if self._middleware or kinds is None
            else _direct_table(kinds - self._boundary.nulls_only, self._key)
        )
        self._sse = SSEDecoder(max_event_bytes=max_event_bytes) if transport == "sse" else None
        self._jsonl = (
            JSONLinesDecoder(max_line_bytes=max_event_bytes, max_depth=max_depth)
            if transport == "jsonl"
            else None
        )
        self._max_depth = max_depth
        self._found: list[Diagnostic] = []  # the current event's diagnostics
        self._context = Context(self._found)  # enforcement reports there too
        for hook in self._middleware:  # middleware that reports its repairs reports there
            bind = getattr(hook, "bind_diagnostics", None)
            if bind is not None:
                bind(self._found.append)
        self._index = 0  # index of the next input event
        self._next: NextStage = next_stage or _deliver
        self._on_failure = on_failure
        self._failure: AgentProtoError | None = None
        self._pending: AgentProtoError | None = None  # raised by the next call
        self._closed = False

    @property
    def failure(self) -> AgentProtoError | None:
        """The fatal error that stopped the stream, if any."""
        return self._failure

    @property
    def events_read(self) -> int:
        """How many input events have been read (delivered or dropped)."""
        return self._index

    # ---- input ---------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Process the next bytes of the stream; returns the events delivered."""
        self._check_usable()
        delivered: list[Event] = []
        try:
            if self._sse is not None:
                # orjson's values, made exact by _enforce where an integer was rounded
                texts, frames = self._sse.feed_data(data)
                values = self._parse_all(texts)
                if values is not None:
                    self._enforce(values, delivered, texts, frames)
                else:
                    for frame in frames():
                        self._document(frame.data, frame.offset, delivered)
            else:
                assert self._jsonl is not None
                self._enforce([line.value for line in self._jsonl.feed(data)], delivered)
        except Exception as exc:  # any failure fails the stream
            error = self._failed(exc, "feed_bytes")
            if not delivered:
                raise chained(error, error.__cause__)
            self._pending = error
        return delivered

    def feed_json(self, event: Any) -> list[Event]:
        """Process one decoded JSON event (in-process delivery or replay).

        The value is checked as bytes would be: nesting at most ``max_depth``, and
        nothing JSON cannot hold (NaN, sets, bytes, non-string keys).
        """
        self._check_usable()
        delivered: list[Event] = []
        try:
            self._check_json(event)
            self._process(event, delivered)
        except Exception as exc:  # any failure fails the stream
            error = self._failed(exc, "feed_json")
            raise chained(error, error.__cause__)
        return delivered

    def feed_all(self, events: Iterable[Any]) -> list[Event]:
        """Process decoded JSON events in order; returns everything delivered."""
        delivered: list[Event] = []
        for event in events:
            delivered += self.feed_json(event)
        return delivered

    def close(self) -> list[Event]:
        """End of stream: flush the framing (an SSE comment line cut off at the end,
        such as ``: keep-alive``, counts as complete).

        Raises:
            DecodeError: the stream ended inside an event (a truncated frame).
        """
        self._check_usable()
        self._closed = True
        delivered: list[Event] = []
        try:
            if self._sse is not None:
                if self._sse.in_comment:
                    # a keep-alive comment cut off at EOF carries no event: end its line
                    self._sse.feed(b"\n")
                for frame in self._sse.close():
                    self._document(frame.data, frame.offset, delivered)
            elif self._jsonl is not None:
                for line in self._jsonl.close():
                    self._process(line.value, delivered)
        except Exception as exc:  # any failure fails the stream
            error = self._failed(exc, "close")
            raise chained(error, error.__cause__)
        return delivered

    # ---- stages --------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            raise pending
        if self._failure is not None:
            raise UsageError("stream.failed", f"the stream already failed: {self._failure}")
        if self._closed:
            raise UsageError("stream.closed", "the stream is already closed")

    def _check_json(self, event: Any) -> None:
        """Refuse a Python value bytes could not have produced (it counts as read)."""
        try:
            check_value(event, max_depth=self._max_depth)
        except SchemaError as exc:
            self._index += 1
            detail = f"event {self._index - 1}: {exc.detail}"
            raise chained(SchemaError(exc.keyword, exc.location, detail), exc)
        except DecodeError as exc:
            self._index += 1
            raise chained(DecodeError(f"event {self._index - 1}: {exc}"), exc)

    def _failed(self, exc: Exception, stage: str) -> AgentProtoError:
        """Fail the stream with ``exc`` (an unexpected one wrapped, chaining it)."""
        error = as_sdk_error(exc, stage)
        self.fail(error)
        return error

    def fail(self, error: AgentProtoError, *, defer: bool = False) -> None:
        """Record a fatal error (also one a later stage found): every later call raises.

        With ``defer`` (the caller returns events it delivered first), the next
        call raises ``error`` itself.
        """
        self._failure = error
        if defer:
            self._pending = error
        if self._on_failure is not None:
            self._on_failure(error)

    def _parse_all(self, texts: list[str]) -> list[Any] | None:
        """Every document of a chunk parsed in one go, as :func:`loads` parses each but
        for integers beyond 64 bits, which orjson rounds to floats (:meth:`_enforce`
        parses a value that may hold one again).

        A document too short to nest deeper than ``max_depth`` is one orjson parses as
        :func:`loads` would, so only the longer ones go to :func:`loads`. None when one
        fails: the caller then goes event by event, which reports the failing one
        exactly, at its offset."""
        limit = self._max_depth
        try:
            if not texts or max(map(len, texts)) <= limit:
                return list(map(orjson.loads, texts))
            plain = orjson.loads
            return [
                plain(text)
                if len(text) <= limit
                else loads(text, max_depth=limit, exact_ints=False)
                for text in texts
            ]
        except (orjson.JSONDecodeError, DecodeError):
            return None

    def _document(self, text: str, offset: int, delivered: list[Event]) -> None:
        try:
            value = loads(text, max_depth=self._max_depth)
        except DecodeError as exc:
            raise self._located(exc, offset)
        self._process(value, delivered)

    def _located(self, exc: DecodeError, offset: int) -> DecodeError:
        """``exc``, raised parsing the document of the next event (at byte ``offset``)."""
        return chained(DecodeError(f"event {self._index}: {exc}", offset=offset), exc)

    def _general(
        self,
        value: Any,
        delivered: list[Event],
        texts: list[str] | None,
        frames: Callable[[], list[SSEEvent]] | None,
        position: int,
    ) -> None:
        """:meth:`_process` for ``value``, the ``position``-th of its chunk; with
        ``texts``, its document parsed again, exactly, when orjson may have rounded an
        integer in it (``frames`` gives the chunk's events, to locate an error)."""
        if texts is not None and may_hold_rounded_int(value):
            try:
                value = loads(texts[position], max_depth=self._max_depth)
            except DecodeError as exc:
                assert frames is not None
                raise self._located(exc, frames()[position].offset)
        self._process(value, delivered)

    def _enforce(
        self,
        values: list[Any],
        delivered: list[Event],
        texts: list[str] | None = None,
        frames: Callable[[], list[SSEEvent]] | None = None,
    ) -> None:
        """Stages 2-4 for decoded events, the common ones the short way.

        An object whose type is in :attr:`_direct`, without the boundary's every-event field,
        is loaded by its type's generated loader (no middleware; the boundary would pass on
        unchanged what that loader accepts); one it refuses or reports on takes the general
        way (:meth:`_general`), which reports the same problem with the event's index. With
        ``texts`` the values are orjson's (an integer beyond 64 bits made a float): an
        accepted event is looked at where it can hold a number, another wholly.
        """
        direct = self._direct
        key = self._key  # None is in no event: JSON keys are strings
        ctx = self._context
        found = self._found
        plain = self._next is _deliver
        index = self._index  # written back before anything that reads it
        first = index  # each value counts one event: values[index - first] is the current
        for value in values:
            if isinstance(value, dict):  # narrowed: compiled code looks up in the dict directly
                kind: Any = value.get("type")
                try:  # an unhashable tag is in no table
                    entry = direct.get(kind)
                except TypeError:
                    entry = None
                if key in value:
                    entry = None
            else:
                entry = None
            if entry is not None:
                try:
                    event = entry[0](value, "", ctx)
                except (SchemaError, Unrecognised):
                    event = None
                if (
                    event is not None
                    and not found
                    and (
                        texts is None
                        or len(value) == entry[1]
                        or not _members_may_hold_rounded_int(value, entry[2])
                    )
                ):
                    index += 1
                    if plain:
                        delivered.append(event)  # compiled: one C call, no bound method
                    else:
                        self._index = index
                        self._stage(event, value, index - 1, delivered)
                    continue
                found.clear()  # the general way reports them again, with the index
            self._index = index
            self._general(value, delivered, texts, frames, index - first)
            index = self._index
        self._index = index

    def _process(self, raw: Any, delivered: list[Event]) -> None:
        """One input event through boundary, middleware, enforcement and the next stage."""
        index = self._index
        self._index = index + 1
        found = self._found  # reused: most events add nothing to it
        event: Event | None = None
        try:
            if type(raw) is not dict:
                raise SchemaError(
                    "type", "", f"an event must be a JSON object, not {describe(raw)}"
                )
            kinds = self._boundary.kinds
            translated: dict[str, Any] | None = raw
            kind = raw.get("type")
            if kinds is None or (type(kind) is str and kind in kinds) or self._key in raw:
                translated = self._boundary.translate(raw, found)
            for hook in self._middleware:
                if translated is None:
                    break
                translated = hook(translated)
            if translated is None:
                return
            try:
                event = load_event(translated, "", self._context)
            except Unrecognised as unknown:
                self._dropped(translated, unknown, found)
                return
        except SchemaError as exc:
            raise chained(_at_event(exc, raw, index), exc)
        finally:
            if event is None and found:  # else the next stage sees them first
                self._attribute(index)
        assert event is not None
        self._stage(event, raw, index, delivered)

    def _stage(self, event: Event, raw: Any, index: int, delivered: list[Event]) -> None:
        """The next stage, for the enforced ``event`` of input event ``index``."""
        try:
            self._next(event, self._found, delivered)
        except SchemaError as exc:
            raise chained(_at_event(exc, raw, index), exc)
        finally:
            if self._found:
                self._attribute(index)

    def _attribute(self, index: int) -> None:
        """Move the current event's diagnostics to :attr:`diagnostics`, with its index."""
        found = self._found
        self._log.extend([attrs.evolve(d, index=index) for d in found])
        found.clear()

    @staticmethod
    def _dropped(event: dict[str, Any], unknown: Unrecognised, found: list[Diagnostic]) -> None:
        kind = event.get("type")
        found.append(
            Diagnostic(
                code="unknown-event-dropped" if not unknown.path else "unknown-member-dropped",
                message=f"dropped event {describe(kind)}: {unknown.detail}",
                path=unknown.path,
                subject=str(kind),
            )
        )


def _at_event(exc: SchemaError, raw: Any, index: int) -> SchemaError:
    """``exc`` naming the input event it was found in."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    return SchemaError(exc.keyword, exc.location, f"event {index} ({describe(kind)}): {exc.detail}")
