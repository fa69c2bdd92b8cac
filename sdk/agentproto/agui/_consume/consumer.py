"""The AG-UI consumer: bytes (or decoded events) in, verified events and state out.

Theory of operation. :class:`Consumer` runs the whole processing model, in the
order it fixes, whatever the transport:

1-4. framing, compatibility boundary, middleware and enforcement
     (:class:`~agentproto.agui.EventDecoder`);
5. **chunk expansion** (:mod:`agentproto.agui._consume.chunks`): ``*_CHUNK`` events become explicit
   START/CONTENT/END events;
6. **verification** (:mod:`agentproto.agui._verify.verifier`): lifecycle, ordering and
   attribution rules;
7. **application** (:mod:`agentproto.agui._reduce.conversation`): the reducer updates messages,
   activities and state.

Stages 5-7 take each event the decoder delivers (:mod:`agentproto.agui._consume.later_stages`).

The consumer is sans-I/O: it never reads a socket or a file; the adapters in
:mod:`agentproto.agui._consume.stream` feed it from byte iterators. A fatal problem, whichever stage
finds it, fails the open run and raises; events delivered before it are never
lost (they are returned, and the error is raised by the next call). After that
every call raises :class:`~agentproto.UsageError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypedDict, Unpack

from agentproto._core.describe import describe
from agentproto._core.diagnostics import DEFAULT_MAX_DIAGNOSTICS, Diagnostic
from agentproto._core.errors import AgentProtoError, UsageError, as_sdk_error
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH, check_value
from agentproto.agui._consume.chunks import ChunkExpander
from agentproto.agui._consume.decoder import EventDecoder, Middleware
from agentproto.agui._consume.later_stages import LaterStages
from agentproto.agui._generated import Event, RunAgentInput
from agentproto.agui._protocol.compat import upgrade_input
from agentproto.agui._protocol.encoding import Transport
from agentproto.agui._protocol.wire import CONVERTER
from agentproto.agui._reduce.conversation import Conversation
from agentproto.agui._reduce.records import DEFAULT_MAX_ACTIVITY_NODES, DEFAULT_MAX_STATE_NODES
from agentproto.agui._verify.subagents import SubagentInvocation
from agentproto.agui._verify.verifier import Verifier

__all__ = ["Consumer", "DecoderOptions"]


class DecoderOptions(TypedDict, total=False):
    """The options of stages 1-4 that a :class:`Consumer` passes on to its
    :class:`~agentproto.agui.EventDecoder`: each is the decoder's keyword argument of
    that name, documented there, with the decoder's default when absent."""

    protocol_version: str
    peer_version: str | None
    middleware: Sequence[Middleware]
    transport: Transport
    max_event_bytes: int


class Consumer:
    """Consume one AG-UI event stream into verified events and conversation state.

    Args:
        run_input: the ``RunAgentInput`` the run was started with (typed or wire
            JSON); its ``state`` is the baseline for state deltas (absent means
            ``{}``), its messages the starting conversation, its ``threadId`` what
            ``RUN_STARTED``/``RUN_FINISHED`` must carry.
        max_depth: deepest JSON nesting accepted, in the run input and in each event.
        max_state_nodes: most JSON values state deltas may grow the state to
            (see :class:`~agentproto.agui.Conversation`).
        max_activity_nodes: the same for each activity's content.
        max_diagnostics: most diagnostics kept; past it one summary entry counts
            the rest (see :class:`~agentproto._core.diagnostics.DiagnosticLog`).
        **options: ``protocol_version``, ``peer_version``, ``middleware``,
            ``transport`` and ``max_event_bytes``, the options of stages 1-4 (see
            :class:`DecoderOptions`).

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
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_state_nodes: int = DEFAULT_MAX_STATE_NODES,
        max_activity_nodes: int = DEFAULT_MAX_ACTIVITY_NODES,
        max_diagnostics: int = DEFAULT_MAX_DIAGNOSTICS,
        **options: Unpack[DecoderOptions],
    ) -> None:
        input_diagnostics: list[Diagnostic] = []
        typed_input = _typed_input(run_input, input_diagnostics, max_depth)
        self.run_input = typed_input
        limits = {"max_state_nodes": max_state_nodes, "max_activity_nodes": max_activity_nodes}
        conversation = (
            Conversation.from_input(typed_input, **limits)
            if typed_input is not None
            else Conversation(
                max_state_nodes=max_state_nodes, max_activity_nodes=max_activity_nodes
            )
        )
        self._chunks = ChunkExpander()
        self._verifier = Verifier(
            thread_id=typed_input.thread_id if typed_input else None,
            messages=typed_input.messages if typed_input else (),
        )
        self._later = LaterStages(self._chunks, self._verifier, conversation)
        self._decoder = EventDecoder(
            **options,
            max_depth=max_depth,
            max_diagnostics=max_diagnostics,
            # each enforced event goes on to the later stages; every fatal error fails
            # the open run, whichever stage found it
            next_stage=self._later.feed,
            on_failure=self._verifier.abort,
        )
        self.diagnostics: list[Diagnostic] = self._decoder.diagnostics
        self.diagnostics += input_diagnostics

    # ---- state ---------------------------------------------------------------------------

    @property
    def conversation(self) -> Conversation:
        """The messages, activities and state the stream built (stage 7)."""
        return self._later.conversation

    @property
    def verifier(self) -> Verifier:
        """The lifecycle verifier (runs, their outcomes and errors)."""
        return self._verifier

    @property
    def subagents(self) -> Mapping[str, SubagentInvocation]:
        """Each subagent invocation's status, by ``subagentRunId`` (see
        :attr:`Verifier.subagents`)."""
        return self._verifier.subagents

    @property
    def decoder(self) -> EventDecoder:
        """Stages 1-4 (framing, boundary, middleware, enforcement)."""
        return self._decoder

    @property
    def failure(self) -> AgentProtoError | None:
        """The fatal error that stopped the stream, if any."""
        return self._decoder.failure

    @property
    def events_read(self) -> int:
        """How many input events have been read (delivered or dropped)."""
        return self._decoder.events_read

    # ---- input ---------------------------------------------------------------------------

    def feed_bytes(self, data: bytes) -> list[Event]:
        """Process the next bytes of the stream; returns the events delivered.

        When a fatal problem is found after some events of ``data`` were delivered,
        those events are returned and the error is raised by the next call (the
        application sees everything that came before the problem, in order).
        """
        return self._decoder.feed_bytes(data)

    def feed_json(self, event: Any) -> list[Event]:
        """Process one decoded JSON event (in-process delivery or replay)."""
        return self._decoder.feed_json(event)

    def feed_all(self, events: Iterable[Any]) -> list[Event]:
        """Process decoded JSON events in order; returns everything delivered."""
        return self._decoder.feed_all(events)

    def close(self) -> list[Event]:
        """End of stream: flush framing and check the run reached a terminal event.

        A final JSON Lines document without its newline is a complete line (JSON
        Lines allows it): its events are delivered. When the stream then turns out
        truncated, the rule of :meth:`feed_bytes` holds: the events this call
        delivered are returned, the failure is recorded at once (:attr:`failure`
        set, the run failed) and the error is raised by the next call (call
        ``close()`` again to see it). With nothing delivered, ``close()`` raises
        directly. A trailing SSE comment without its newline (``: keep-alive`` at
        EOF) is not a truncated event.

        Raises:
            DecodeError: the stream ended inside an event.
            ProtocolError: a run is still open (the stream was truncated); the run
                has no outcome and is never reported as a success.
        """
        delivered = self._decoder.close()
        try:
            found: list[Diagnostic] = []
            try:
                for event in self._chunks.close():
                    self._later.take(event, found, delivered)
            finally:
                self.diagnostics += found  # the log's own +=, within its limit
            self._verifier.close()
        except Exception as exc:  # any failure fails the stream
            error = as_sdk_error(exc, "close")
            self._decoder.fail(error, defer=bool(delivered))
            if not delivered:
                raise error from error.__cause__
        return delivered


def _typed_input(
    run_input: RunAgentInput | dict[str, Any] | None, found: list[Diagnostic], max_depth: int
) -> RunAgentInput | None:
    """The run input, checked like events: wire JSON through enforcement (unknown
    material stripped into ``found``, a malformed known field fatal), typed input held
    to the same depth limit."""
    if isinstance(run_input, dict):
        loaded: RunAgentInput = CONVERTER.load(
            upgrade_input(run_input), RunAgentInput, diagnostics=found, max_depth=max_depth
        )
        return loaded
    if isinstance(run_input, RunAgentInput):
        check_value(CONVERTER.dump(run_input), max_depth=max_depth)
        return run_input
    if run_input is None:
        return None
    raise UsageError(
        "consumer.run-input",
        f"run_input must be a RunAgentInput or a dict, not {describe(run_input)}",
    )
