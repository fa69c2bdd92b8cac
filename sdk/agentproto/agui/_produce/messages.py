"""Typed helpers for the events that stream messages: text messages, tool calls, reasoning.

Theory of operation
-------------------
:class:`MessageEvents` is one of the bases of :class:`~agentproto.agui.RunProducer`.
Each helper builds one typed event from its arguments, filling in what the caller
should not have to repeat (a generated id when the id is omitted, the attribution
of an open item on its continuations), and hands it to the producer's gate
(``_send``), which checks every producer duty and emits it. The streaming helpers
(``text_message()``, ``tool_call()``, ``reasoning()``, ``reasoning_message()``)
emit the START event and return a handle from :mod:`agentproto.agui._produce.handles` for
the rest. Nothing here keeps state: what the client holds is the producer's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar, Unpack, cast

from agentproto._core.json.codec import dumps
from agentproto.agui import _generated as g
from agentproto.agui._generated import Event
from agentproto.agui._produce.handles import (
    ReasoningMessageWriter,
    ReasoningSpan,
    TextMessageWriter,
    ToolCallWriter,
)
from agentproto.agui._protocol.wire import _converter

if TYPE_CHECKING:
    from agentproto.agui._produce.producer import RunProducer

__all__ = ["MessageEvents"]

E = TypeVar("E", bound=Event)


class Attribution(TypedDict, total=False):
    """The keyword arguments every message event takes besides its own fields.

    Attributes:
        metadata: event metadata (merged onto the item it streams).
        subagent_run_id: the subagent invocation the event belongs to (its owner).
    """

    metadata: dict[str, Any] | None
    subagent_run_id: str | None


def _json_text(value: Any) -> str:
    """Tool arguments or result as text: a string as is, anything else as compact JSON."""
    return value if isinstance(value, str) else dumps(value).decode("utf-8")


def _typed(value: Any, tp: Any) -> Any:
    """``value`` (typed objects, wire JSON or a mix) checked and built as ``tp``."""
    return _converter.load(_converter.dump(value), tp)


class EventSender:
    """What the typed helpers need from the producer they are a base of.

    Attributes:
        _new_id: makes an id from a prefix (``"msg"``, ``"call"``, ...).
    """

    _new_id: Callable[[str], str]

    def _send(self, event: E, *, retype: bool = False) -> E:
        """Check ``event`` against every producer duty and emit it (the producer's gate)."""
        raise NotImplementedError


class MessageEvents(EventSender):
    """The producer's helpers for text messages, tool calls and reasoning."""

    # ---- text messages -------------------------------------------------------------------

    def text_message_start(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.TextMessageStartEvent:
        """TEXT_MESSAGE_START (``role=None`` leaves it out, which means assistant)."""
        return self._send(
            g.TextMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("msg"),
                role=role,
                name=name,
                **attribution,
            )
        )

    def text_message_content(
        self, message_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.TextMessageContentEvent:
        """TEXT_MESSAGE_CONTENT."""
        return self._send(
            g.TextMessageContentEvent(message_id=message_id, delta=delta, **attribution)
        )

    def text_message_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.TextMessageEndEvent:
        """TEXT_MESSAGE_END."""
        return self._send(g.TextMessageEndEvent(message_id=message_id, **attribution))

    def text_message(
        self,
        message_id: str | None = None,
        *,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> TextMessageWriter:
        """TEXT_MESSAGE_START now; the returned writer streams the content and ends it.

        Example::

            with producer.text_message() as message:
                message.content("Hello, ")
                message.content("world")
        """
        start = self.text_message_start(message_id, role=role, name=name, **attribution)
        return TextMessageWriter(cast("RunProducer", self), start)

    def text(
        self,
        content: str | Iterable[str],
        *,
        message_id: str | None = None,
        role: g.TextMessageRole | None = "assistant",
        name: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> list[Event]:
        """A whole text message: START, one CONTENT per non-empty piece, END."""
        pieces = [content] if isinstance(content, str) else list(content)
        writer = self.text_message(message_id, role=role, name=name, **attribution)
        out: list[Event] = [writer.start_event]
        out += [writer.content(piece) for piece in pieces if piece]
        out.append(writer.end())
        return out

    # ---- tool calls ----------------------------------------------------------------------

    def tool_call_start(
        self,
        tool_call_name: str,
        *,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ToolCallStartEvent:
        """TOOL_CALL_START."""
        return self._send(
            g.ToolCallStartEvent(
                tool_call_id=tool_call_id if tool_call_id is not None else self._new_id("call"),
                tool_call_name=tool_call_name,
                parent_message_id=parent_message_id,
                **attribution,
            )
        )

    def tool_call_args(
        self, tool_call_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.ToolCallArgsEvent:
        """TOOL_CALL_ARGS (a piece of the arguments' text)."""
        return self._send(
            g.ToolCallArgsEvent(tool_call_id=tool_call_id, delta=delta, **attribution)
        )

    def tool_call_end(
        self, tool_call_id: str, **attribution: Unpack[Attribution]
    ) -> g.ToolCallEndEvent:
        """TOOL_CALL_END."""
        return self._send(g.ToolCallEndEvent(tool_call_id=tool_call_id, **attribution))

    def tool_call(
        self,
        tool_call_name: str,
        *,
        args: Any = None,
        tool_call_id: str | None = None,
        parent_message_id: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> ToolCallWriter:
        """TOOL_CALL_START now (and TOOL_CALL_ARGS when ``args`` is given: a string as is,
        any other JSON value encoded); the writer streams more arguments, ends the call
        and reports its result.

        Example::

            with producer.tool_call("search", args={"query": "AG-UI"}) as call:
                pass
            call.result("3 results")
        """
        start = self.tool_call_start(
            tool_call_name,
            tool_call_id=tool_call_id,
            parent_message_id=parent_message_id,
            **attribution,
        )
        writer = ToolCallWriter(
            cast("RunProducer", self), start.tool_call_id, start.subagent_run_id
        )
        if args is not None:
            writer.args(_json_text(args))
        return writer

    def tool_result(
        self,
        tool_call_id: str,
        content: Any,
        *,
        message_id: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ToolCallResultEvent:
        """TOOL_CALL_RESULT: the tool message for a call.

        Args:
            tool_call_id: the call answered.
            content: a string, a list of content parts (typed or wire JSON), or any
                other JSON value (sent as its JSON text).
            message_id: the tool message's id (generated when omitted).
            **attribution: ``metadata`` (merged onto the tool message) and
                ``subagent_run_id`` (see :class:`Attribution`).
        """
        if isinstance(content, list):
            content = _typed(content, list[g.ContentPart])
        elif not isinstance(content, str):
            content = _json_text(content)
        return self._send(
            g.ToolCallResultEvent(
                message_id=message_id if message_id is not None else self._new_id("tool-result"),
                tool_call_id=tool_call_id,
                content=content,
                **attribution,
            )
        )

    # ---- reasoning -----------------------------------------------------------------------

    def reasoning_start(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.ReasoningStartEvent:
        """REASONING_START (opens a reasoning span)."""
        return self._send(
            g.ReasoningStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                **attribution,
            )
        )

    def reasoning_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningEndEvent:
        """REASONING_END (closes a reasoning span)."""
        return self._send(g.ReasoningEndEvent(message_id=message_id, **attribution))

    def reasoning(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> ReasoningSpan:
        """REASONING_START now; the span opens its reasoning message and ends with
        REASONING_END (on exit when used as a context manager)."""
        start = self.reasoning_start(message_id, **attribution)
        return ReasoningSpan(cast("RunProducer", self), start.message_id, start.subagent_run_id)

    def reasoning_message_start(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageStartEvent:
        """REASONING_MESSAGE_START."""
        return self._send(
            g.ReasoningMessageStartEvent(
                message_id=message_id if message_id is not None else self._new_id("reasoning"),
                **attribution,
            )
        )

    def reasoning_message_content(
        self, message_id: str, delta: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageContentEvent:
        """REASONING_MESSAGE_CONTENT."""
        return self._send(
            g.ReasoningMessageContentEvent(message_id=message_id, delta=delta, **attribution)
        )

    def reasoning_message_end(
        self, message_id: str, **attribution: Unpack[Attribution]
    ) -> g.ReasoningMessageEndEvent:
        """REASONING_MESSAGE_END."""
        return self._send(g.ReasoningMessageEndEvent(message_id=message_id, **attribution))

    def reasoning_message(
        self, message_id: str | None = None, **attribution: Unpack[Attribution]
    ) -> ReasoningMessageWriter:
        """REASONING_MESSAGE_START now; the writer streams the content and ends it."""
        start = self.reasoning_message_start(message_id, **attribution)
        return ReasoningMessageWriter(
            cast("RunProducer", self), start.message_id, start.subagent_run_id
        )

    def reasoning_encrypted_value(
        self,
        subtype: g.ReasoningEncryptedValueSubtype,
        entity_id: str,
        encrypted_value: str,
        *,
        encrypted_value_type: str | None = None,
        **attribution: Unpack[Attribution],
    ) -> g.ReasoningEncryptedValueEvent:
        """REASONING_ENCRYPTED_VALUE for a message or tool call the client knows."""
        return self._send(
            g.ReasoningEncryptedValueEvent(
                subtype=subtype,
                entity_id=entity_id,
                encrypted_value=encrypted_value,
                encrypted_value_type=encrypted_value_type,
                **attribution,
            )
        )
