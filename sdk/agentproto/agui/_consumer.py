"""The AG-UI consumer pipeline: bytes (or decoded events) in, verified events and state out.

Theory of operation. Every incoming event takes the same path, in the order the
processing model fixes, whatever transport it came over (SSE, JSON Lines,
in-process dicts, a replayed recording):

1. **framing** (bytes only): SSE or JSON Lines into JSON documents;
2. **compatibility boundary** (:mod:`._boundary`): version check, retired shapes;
3. **middleware**: caller hooks see the raw material before anything is stripped;
4. **enforcement**: the document becomes a typed event; unknown event types,
   properties and union members are stripped with diagnostics, a known field
   holding a malformed value is fatal (:class:`~agentproto.SchemaError`);
5. **chunk expansion** (:mod:`._chunks`): ``*_CHUNK`` events become explicit
   START/CONTENT/END events;
6. **verification** (:mod:`._verify`): lifecycle, ordering and attribution rules;
7. **application** (:mod:`._conversation`): the reducer updates messages,
   activities and state.

The consumer is sans-I/O: it never reads a socket or a file; the adapters in
:mod:`._stream` feed it from byte iterators. A fatal problem raises and leaves
the consumer failed: later calls raise :class:`~agentproto.UsageError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import attrs

from agentproto._core.converter import Unrecognised, _Context
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError, DecodeError, SchemaError, UsageError
from agentproto._core.jsonlines import JSONLinesDecoder
from agentproto._core.jsonutil import DEFAULT_MAX_DEPTH, loads
from agentproto._core.sse import DEFAULT_MAX_EVENT_BYTES, SSEDecoder, SSEEvent
from agentproto.agui._boundary import CompatibilityBoundary, upgrade_input
from agentproto.agui._chunks import ChunkExpander
from agentproto.agui._conversation import Conversation
from agentproto.agui._generated import Event, RunAgentInput
from agentproto.agui._verify import Verifier
from agentproto.agui._wire import _converter, _load_event

__all__ = ["Consumer", "Middleware"]

Middleware = Callable[[dict[str, Any]], "dict[str, Any] | None"]
"""A hook on raw events: return the (possibly changed) event, or None to drop it."""

Transport = Literal["sse", "jsonl"]


class Consumer:
    """Consume one AG-UI event stream into verified events and conversation state.

    Args:
        run_input: the ``RunAgentInput`` the run was started with (typed or wire
            JSON); its ``state`` is the baseline for state deltas (absent means
            ``{}``), its messages the starting conversation, its ``threadId`` what
            ``RUN_STARTED``/``RUN_FINISHED`` must carry.
        protocol_version: the ``MAJOR.MINOR`` this client speaks.
        peer_version: the newest version an old peer speaks, when pinned to one.
        middleware: hooks applied in order to each raw event after the boundary.
        transport: framing of :meth:`feed_bytes`: ``"sse"`` or ``"jsonl"``.
        max_event_bytes: largest single event accepted from bytes.
        max_depth: deepest JSON nesting accepted.

    Example::

        consumer = Consumer()
        for chunk in response.iter_bytes():
            for event in consumer.feed_bytes(chunk):
                print(event.type)
        consumer.close()
        print(consumer.conversation.messages)
    """

    def __init__(
        self,
        *,
        run_input: RunAgentInput | dict[str, Any] | None = None,
        protocol_version: str = "1.0",
        peer_version: str | None = None,
        middleware: Sequence[Middleware] = (),
        transport: Transport = "sse",
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        self.diagnostics: list[Diagnostic] = []
        typed_input: RunAgentInput | None
        if isinstance(run_input, dict):
            # the input goes through the same enforcement as events: unknown material
            # is stripped with diagnostics, a malformed known field is fatal
            typed_input = _converter.load(
                upgrade_input(run_input), RunAgentInput, diagnostics=self.diagnostics
            )
        else:
            typed_input = run_input
        self.run_input = typed_input
        self.conversation = (
            Conversation.from_input(typed_input) if typed_input is not None else Conversation()
        )
        self._boundary = CompatibilityBoundary(
            protocol_version=protocol_version, peer_version=peer_version
        )
        self._middleware = tuple(middleware)
        self._chunks = ChunkExpander()
        self._verifier = Verifier(
            thread_id=typed_input.thread_id if typed_input else None,
            messages=typed_input.messages if typed_input else (),
        )
        self._transport = transport
        self._sse = SSEDecoder(max_event_bytes=max_event_bytes) if transport == "sse" else None
        self._jsonl = (
            JSONLinesDecoder(max_line_bytes=max_event_bytes) if transport == "jsonl" else None
        )
        self._max_depth = max_depth
        self._context = _Context([])  # enforcement's diagnostics go to the current event
        self._index = 0  # index of the next input event
        self._failure: AgentProtoError | None = None
        self._pending: AgentProtoError | None = None  # raised by the next call
        self._closed = False

    # ---- state ---------------------------------------------------------------------------

    @property
    def verifier(self) -> Verifier:
        """The lifecycle verifier (runs, their outcomes and errors)."""
        return self._verifier

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
        """Process the next bytes of the stream; returns the events delivered.

        When a fatal problem is found after some events of ``data`` were delivered,
        those events are returned and the error is raised by the next call (the
        application sees everything that came before the problem, in order).
        """
        self._check_usable()
        delivered: list[Event] = []
        try:
            if self._sse is not None:
                self._documents(self._sse.feed(data), delivered)
            else:
                assert self._jsonl is not None
                self._values([line.value for line in self._jsonl.feed(data)], delivered)
        except AgentProtoError as exc:
            self._fail(exc)
            if not delivered:
                raise
            self._pending = exc
        return delivered

    def feed_json(self, event: Any) -> list[Event]:
        """Process one decoded JSON event (in-process delivery or replay)."""
        self._check_usable()
        delivered: list[Event] = []
        try:
            self._process(event, delivered)
        except AgentProtoError as exc:
            self._fail(exc)
            raise
        return delivered

    def feed_all(self, events: Iterable[Any]) -> list[Event]:
        """Process decoded JSON events in order; returns everything delivered."""
        delivered: list[Event] = []
        for event in events:
            delivered += self.feed_json(event)
        return delivered

    def close(self) -> list[Event]:
        """End of stream: flush framing and check the run reached a terminal event.

        Raises:
            DecodeError: the stream ended inside an event.
            ProtocolError: a run is still open (the stream was truncated); the run
                has no outcome and is never reported as a success.
        """
        self._check_usable()
        self._closed = True
        delivered: list[Event] = []
        try:
            if self._sse is not None:
                self._documents(self._sse.close(), delivered)
            elif self._jsonl is not None:
                self._values([line.value for line in self._jsonl.close()], delivered)
            for event in self._chunks.close():
                self._verify_apply(event, self.diagnostics, delivered)
            self._verifier.close()
        except AgentProtoError as exc:
            self._fail(exc)
            raise
        return delivered

    # ---- pipeline ------------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            raise pending
        if self._failure is not None:
            raise UsageError("consumer.failed", f"the stream already failed: {self._failure}")
        if self._closed:
            raise UsageError("consumer.closed", "the stream is already closed")

    def _fail(self, error: AgentProtoError) -> None:
        self._failure = error
        self._verifier.abort(error)  # the open run fails, whichever stage found the problem

    def _documents(self, events: list[SSEEvent], delivered: list[Event]) -> None:
        max_depth = self._max_depth
        process = self._process
        for event in events:
            try:
                value = loads(event.data, max_depth=max_depth)
            except DecodeError as exc:
                raise DecodeError(f"event {self._index}: {exc}", offset=event.offset) from exc
            process(value, delivered)

    def _values(self, values: list[Any], delivered: list[Event]) -> None:
        for value in values:
            self._process(value, delivered)

    def _process(self, raw: Any, delivered: list[Event]) -> None:
        """One input event through boundary, middleware, enforcement and the rest."""
        index = self._index
        self._index = index + 1
        found: list[Diagnostic] = []
        try:
            if raw.__class__ is not dict:
                raise SchemaError("type", "", f"an event must be a JSON object, not {raw!r:.40}")
            translated = self._boundary.translate(raw, found)
            for hook in self._middleware:
                if translated is None:
                    break
                translated = hook(translated)
            if translated is None:
                return
            self._context.diagnostics = found
            try:
                event: Event = _load_event(translated, "", self._context)
            except Unrecognised as unknown:
                self._dropped(translated, unknown, found)
                return
            for explicit in self._chunks.feed(event):
                found += self._verifier.feed(explicit)
                found += self.conversation.apply(explicit).diagnostics
                delivered.append(explicit)
        except SchemaError as exc:
            kind = raw.get("type") if isinstance(raw, dict) else None
            raise SchemaError(
                exc.keyword, exc.location, f"event {index} ({kind}): {exc.detail}"
            ) from exc
        finally:
            if found:
                self.diagnostics += [attrs.evolve(d, index=index) for d in found]

    @staticmethod
    def _dropped(event: dict[str, Any], unknown: Unrecognised, found: list[Diagnostic]) -> None:
        kind = event.get("type")
        found.append(
            Diagnostic(
                code="unknown-event-dropped" if not unknown.path else "unknown-member-dropped",
                message=f"dropped event {kind!r}: {unknown.detail}",
                path=unknown.path,
                subject=str(kind),
            )
        )

    def _verify_apply(self, event: Event, found: list[Diagnostic], delivered: list[Event]) -> None:
        found += self._verifier.feed(event)
        found += self.conversation.apply(event).diagnostics
        delivered.append(event)
