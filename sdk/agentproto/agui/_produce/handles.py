"""The handles the producer's streaming helpers return: open items and brackets.

Theory of operation
-------------------
A streaming helper of :class:`~agentproto.agui.RunProducer` (``text_message()``,
``tool_call()``, ``reasoning()``, ``reasoning_message()``, ``step()``, ``subagent()``,
``run()``) emits the START event of what it opens and returns a handle for it. The
handle remembers the ids and the attribution of what it opened, so that the
continuations it emits repeat them, and it emits them through the producer's
helpers (every producer duty is checked there, none here).

Each handle is a context manager. On exit it closes what is still open: with the
normal END event, also when the block raised (a subagent then ends with
SUBAGENT_ERROR, a run with RUN_ERROR), but never once the producer has failed or is
closed, and an error while closing after the block raised never hides the block's
own exception.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar, Unpack, cast

from agentproto._core.errors import AgentProtoError
from agentproto.agui import _generated as g

if TYPE_CHECKING:
    from agentproto.agui._produce.producer import (
        RunFinish,
        RunOutcome,
        RunProducer,
        SubagentOutcome,
    )

__all__ = [
    "ReasoningMessageWriter",
    "ReasoningSpan",
    "RunScope",
    "StepScope",
    "SubagentScope",
    "TextMessageWriter",
    "ToolCallWriter",
]

Ended = TypeVar("Ended")
Piece = TypeVar("Piece")
End = TypeVar("End")


class _Scope:
    """Something opened by a helper that must be closed; a context manager.

    On exit the scope closes what is still open — also when the block raised, unless
    the producer failed — and an error while closing after the block raised never
    hides the block's exception.
    """

    __slots__ = ("_open", "producer")

    def __init__(self, producer: RunProducer) -> None:
        self.producer = producer
        self._open = True

    @property
    def open(self) -> bool:
        """Whether the scope still has to be closed."""
        return self._open

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._open or self._settled():
            return
        if exc is None:
            self._close()
            return
        with contextlib.suppress(AgentProtoError):  # the block's own exception is the one to see
            self._close_on_error(exc)

    def _ended(self, event: Ended) -> Ended:
        """``event`` (the one that closed the scope), once the scope is marked closed."""
        self._open = False
        return event

    def _settled(self) -> bool:
        """Whether exiting must leave the scope as it is (the producer failed or is closed)."""
        producer = self.producer
        return producer.failure is not None or producer.closed

    def _close(self) -> None:
        raise NotImplementedError

    def _close_on_error(self, exc: BaseException) -> None:
        self._close()


class _Attributed(_Scope):
    """A scope whose continuations repeat one owner (``subagent_run_id``)."""

    __slots__ = ("subagent_run_id",)

    def __init__(self, producer: RunProducer, subagent_run_id: str | None) -> None:
        super().__init__(producer)
        self.subagent_run_id = subagent_run_id


class _Item(_Attributed):
    """An open message-like item: its ``messageId`` and owner, repeated on every continuation.

    ``_END`` names the producer helper that closes it; its ``end()`` is the one routine
    of every such item.
    """

    __slots__ = ("message_id",)
    _END: ClassVar[str]

    def __init__(self, producer: RunProducer, message_id: str, subagent_run_id: str | None) -> None:
        super().__init__(producer, subagent_run_id)
        self.message_id = message_id

    def _continue(self, helper: str, *args: Any, metadata: dict[str, Any] | None) -> Any:
        """The event the producer helper named ``helper`` sends for this item."""
        send = getattr(self.producer, helper)
        return send(self.message_id, *args, metadata=metadata, subagent_run_id=self.subagent_run_id)

    def _close(self) -> None:
        self._ended(self._continue(self._END, metadata=None))


class _Writer(_Item, Generic[Piece, End]):
    """An open message whose text streams in pieces (CONTENT events), then ends (END)."""

    __slots__ = ()
    _CONTENT: ClassVar[str]

    def content(self, delta: str, *, metadata: dict[str, Any] | None = None) -> Piece:
        """The next piece of text (a TEXT_MESSAGE_CONTENT or REASONING_MESSAGE_CONTENT)."""
        return cast("Piece", self._continue(self._CONTENT, delta, metadata=metadata))

    def end(self, *, metadata: dict[str, Any] | None = None) -> End:
        """The message's END (TEXT_MESSAGE_END or REASONING_MESSAGE_END)."""
        return cast("End", self._ended(self._continue(self._END, metadata=metadata)))


class TextMessageWriter(_Writer[g.TextMessageContentEvent, g.TextMessageEndEvent]):
    """An open text message (from :meth:`RunProducer.text_message`).

    Attributes:
        message_id: the message's id.
        subagent_run_id: its owner (repeated on every continuation).
        start_event: the TEXT_MESSAGE_START that opened it.
    """

    __slots__ = ("start_event",)
    _CONTENT = "text_message_content"
    _END = "text_message_end"

    def __init__(self, producer: RunProducer, start_event: g.TextMessageStartEvent) -> None:
        super().__init__(producer, start_event.message_id, start_event.subagent_run_id)
        self.start_event = start_event


class ReasoningMessageWriter(_Writer[g.ReasoningMessageContentEvent, g.ReasoningMessageEndEvent]):
    """An open reasoning message (from :meth:`RunProducer.reasoning_message`)."""

    __slots__ = ()
    _CONTENT = "reasoning_message_content"
    _END = "reasoning_message_end"


class ReasoningSpan(_Item):
    """An open reasoning span (from :meth:`RunProducer.reasoning`)."""

    __slots__ = ()
    _END = "reasoning_end"

    def message(self, *, metadata: dict[str, Any] | None = None) -> ReasoningMessageWriter:
        """REASONING_MESSAGE_START for the span's ``messageId``; returns its writer."""
        return cast(
            "ReasoningMessageWriter", self._continue("reasoning_message", metadata=metadata)
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.ReasoningEndEvent:
        """REASONING_END."""
        return cast(
            "g.ReasoningEndEvent", self._ended(self._continue(self._END, metadata=metadata))
        )


class ToolCallWriter(_Attributed):
    """An open tool call (from :meth:`RunProducer.tool_call`)."""

    __slots__ = ("tool_call_id",)

    def __init__(
        self, producer: RunProducer, tool_call_id: str, subagent_run_id: str | None
    ) -> None:
        super().__init__(producer, subagent_run_id)
        self.tool_call_id = tool_call_id

    def args(self, delta: str, *, metadata: dict[str, Any] | None = None) -> g.ToolCallArgsEvent:
        """TOOL_CALL_ARGS: the next piece of the arguments' text."""
        return self.producer.tool_call_args(
            self.tool_call_id, delta, metadata=metadata, subagent_run_id=self.subagent_run_id
        )

    def end(self, *, metadata: dict[str, Any] | None = None) -> g.ToolCallEndEvent:
        """TOOL_CALL_END."""
        return self._ended(
            self.producer.tool_call_end(
                self.tool_call_id, metadata=metadata, subagent_run_id=self.subagent_run_id
            )
        )

    def result(
        self,
        content: Any,
        *,
        message_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.ToolCallResultEvent:
        """TOOL_CALL_RESULT for this call (ending the call first if it is still open)."""
        if self._open:
            self.end()
        return self.producer.tool_result(
            self.tool_call_id,
            content,
            message_id=message_id,
            metadata=metadata,
            subagent_run_id=self.subagent_run_id,
        )

    def _close(self) -> None:
        self.end()


class StepScope(_Attributed):
    """An open step (from :meth:`RunProducer.step`)."""

    __slots__ = ("step_name",)

    def __init__(self, producer: RunProducer, step_name: str, subagent_run_id: str | None) -> None:
        super().__init__(producer, subagent_run_id)
        self.step_name = step_name

    def finish(self, *, metadata: dict[str, Any] | None = None) -> g.StepFinishedEvent:
        """STEP_FINISHED."""
        return self._ended(
            self.producer.step_finished(
                self.step_name, metadata=metadata, subagent_run_id=self.subagent_run_id
            )
        )

    def _close(self) -> None:
        self.finish()


class SubagentScope(_Scope):
    """An active subagent invocation (from :meth:`RunProducer.subagent`).

    Attributes:
        subagent_run_id: the invocation's id; pass it as ``subagent_run_id`` to
            attribute events to it.
        name: the subagent's name.
    """

    __slots__ = ("name", "subagent_run_id")

    def __init__(self, producer: RunProducer, subagent_run_id: str, name: str) -> None:
        super().__init__(producer)
        self.subagent_run_id = subagent_run_id
        self.name = name

    def finish(
        self,
        *,
        outcome: SubagentOutcome | None = None,
        result: Any = None,
        metadata: dict[str, Any] | None = None,
    ) -> g.SubagentFinishedEvent:
        """SUBAGENT_FINISHED."""
        return self._ended(
            self.producer.subagent_finished(
                self.subagent_run_id, outcome=outcome, result=result, metadata=metadata
            )
        )

    def error(
        self, message: str, *, code: str | None = None, metadata: dict[str, Any] | None = None
    ) -> g.SubagentErrorEvent:
        """SUBAGENT_ERROR."""
        return self._ended(
            self.producer.subagent_error(
                self.subagent_run_id, message, code=code, metadata=metadata
            )
        )

    def _close(self) -> None:
        self.finish()

    def _close_on_error(self, exc: BaseException) -> None:
        self.error(
            f"subagent '{self.name}' failed ({type(exc).__name__})", code="subagent.exception"
        )


class RunScope(_Scope):
    """The current run (from :meth:`RunProducer.run`): RUN_FINISHED on a clean exit,
    RUN_ERROR when the block raises."""

    __slots__ = ()

    def finish(
        self, *, outcome: RunOutcome | None = None, **finish: Unpack[RunFinish]
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED (the arguments of :meth:`RunProducer.run_finished`)."""
        return self._ended(self.producer.run_finished(outcome=outcome, **finish))

    def interrupted(
        self, interrupts: Iterable[g.Interrupt | Mapping[str, Any]], **finish: Unpack[RunFinish]
    ) -> g.RunFinishedEvent:
        """RUN_FINISHED with the interrupt outcome (see :meth:`RunProducer.run_interrupted`)."""
        return self._ended(self.producer.run_interrupted(interrupts, **finish))

    def error(
        self, message: str, *, code: str | None = None, metadata: dict[str, Any] | None = None
    ) -> g.RunErrorEvent:
        """RUN_ERROR."""
        return self._ended(self.producer.run_error(message, code=code, metadata=metadata))

    def _settled(self) -> bool:
        # a RUN_ERROR is accepted even after the producer failed: only a closed producer
        # or a run no longer running leaves nothing to send
        producer = self.producer
        if producer.closed or producer.phase != "running":
            self._open = False
            return True
        return False

    def _close(self) -> None:
        if self.producer.failure is None:
            self.finish()

    def _close_on_error(self, exc: BaseException) -> None:
        self.error(f"the run failed ({type(exc).__name__})", code="run.exception")
