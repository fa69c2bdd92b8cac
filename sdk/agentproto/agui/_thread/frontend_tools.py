"""Frontend tools: the round trip of a call to a tool the client declared in its run input.

Theory of operation
-------------------
The ``tools`` of a run input are the application's own (the draft's tool-calls page,
"Frontend tools"): the agent proposes a call, the application executes it, and as
the protocol has no channel from the consumer in the middle of a run, the answer
crosses a run boundary:

1. **Agent side.** A producer that calls a frontend tool must not answer it: no
   TOOL_CALL_RESULT, no tool message of its own making in a MESSAGES_SNAPSHOT
   (:func:`refuse_client_tool_answers`, called by the producer's gate). It finishes
   the run with the call unanswered; its success outcome may name the run's
   unanswered calls in ``pendingToolCallIds`` (:func:`pending_outcome`), which
   the schema defines as every call the run started and did not answer, in the
   order made, whatever the tool.
2. **Client side.** :func:`unanswered_tool_calls` lists the calls to declared
   tools that no tool message answers; :func:`answer_tool_calls` /
   :func:`aanswer_tool_calls` run the application's functions for them and give
   one tool message per call, a failure included (a tool message with ``error``
   set: bad JSON arguments, arguments that are not an object, a function that
   raised, a return value that is not JSON).
3. **Continuing.** A thread that continues must first answer every unanswered
   call to a declared tool: :func:`with_tool_answers`, called by
   :func:`~agentproto.agui.next_run_input`, places the answers given after the
   assistant message holding each call and refuses an input that would leave one
   unanswered (``toolcall.unanswered``), before the input is built.

A call to a tool that was not declared is not a violation: what to do with it is
the consumer's decision, so none of these rules counts it (an answer to one is
accepted). Error codes (:class:`~agentproto.UsageError`):

=================================  ===========================================================
code                               raised when
=================================  ===========================================================
``toolcall.unanswered``            the next input would leave calls to declared tools
                                   unanswered (the message lists their ids)
``toolcall.unknown-call``          an answer names a tool call the conversation does not hold
``toolcall.already-answered``      an answer for a call already answered (or answered twice)
``toolcall.duplicate-id``          an answer reuses the id of another message
``toolcall.no-function``           no function is given for a declared tool that has calls
                                   to answer (nothing is run)
``toolcall.async-function``        ``answer_tool_calls`` given an async function (use
                                   ``aanswer_tool_calls``)
``toolcall.bad-argument``          a tool that is neither a ``Tool`` nor a name, a message
                                   that is not a typed message, a function not callable
``producer.client-tool-answered``  a producer answering a call to one of its run input's
                                   tools (TOOL_CALL_RESULT, or a tool message in a
                                   MESSAGES_SNAPSHOT the client does not already hold)
=================================  ===========================================================
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias, get_args

from agentproto._core.errors import DecodeError, SchemaError, UsageError
from agentproto._core.json.codec import loads
from agentproto.agui import _generated as g
from agentproto.agui._generated import (
    AssistantMessage,
    ContentPart,
    Message,
    RunAgentInput,
    Tool,
    ToolCall,
    ToolMessage,
)
from agentproto.agui._protocol.wire import json_text, load_as
from agentproto.agui._reduce.conversation import Conversation

__all__ = [
    "ToolFunction",
    "aanswer_tool_calls",
    "answer_tool_calls",
    "pending_outcome",
    "refuse_client_tool_answers",
    "unanswered_tool_calls",
    "with_tool_answers",
]

ToolFunction: TypeAlias = Callable[..., Any]
"""An application's tool: called with the call's arguments (a JSON object) as keyword
arguments; returns a string, a list of typed content parts, or any JSON value (sent as
its JSON text). An ``async def`` function is awaited by :func:`aanswer_tool_calls`."""

_PARTS: Final = tuple(get_args(ContentPart))
_MESSAGES: Final = tuple(get_args(Message))
_logger = logging.getLogger("agentproto.agui")


def _random_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex}"


def _quoted(ids: Iterable[str]) -> str:
    return ", ".join(f"'{i}'" for i in ids)


# ---- which calls are unanswered ----------------------------------------------------------


def _many(value: Any, what: str, one: tuple[type, ...]) -> None:
    """Refuse a single item (or a non-iterable) where a collection of them is expected."""
    if isinstance(value, (*one, str, bytes)) or not isinstance(value, Iterable):
        raise UsageError(
            "toolcall.bad-argument", f"{what} is a collection, not a {type(value).__name__}"
        )


def _tool_names(tools: Iterable[Tool | str]) -> frozenset[str]:
    _many(tools, "tools", (Tool,))
    names = set()
    for tool in tools:
        if isinstance(tool, Tool):
            names.add(tool.name)
        elif isinstance(tool, str):
            names.add(tool)
        else:
            raise UsageError(
                "toolcall.bad-argument",
                f"tools are Tool objects or tool names, not {type(tool).__name__}",
            )
    return frozenset(names)


def _message_list(messages: Conversation | Iterable[Message]) -> Sequence[Message]:
    if isinstance(messages, Conversation):
        return messages.messages
    _many(messages, "messages", _MESSAGES)
    found = list(messages)
    for index, message in enumerate(found):
        if not isinstance(message, _MESSAGES):
            raise UsageError(
                "toolcall.bad-argument",
                f"messages[{index}] is a {type(message).__name__}, not a typed message "
                f"(parse wire JSON with parse_message first)",
            )
    return found


def unanswered_tool_calls(
    messages: Conversation | Iterable[Message], tools: Iterable[Tool | str]
) -> list[ToolCall]:
    """The calls to the client's declared tools that no tool message answers.

    Args:
        messages: a conversation (:attr:`Conversation.messages` are read) or typed
            messages, such as a run input's.
        tools: the tools the client declared (the run input's ``tools``), as
            :class:`~agentproto.agui.schema.Tool` objects or names. Calls to any other
            tool are not counted: the protocol leaves them to the consumer.

    Returns:
        The calls, in conversation order, each as its assistant message holds it
        (``call.function.name``, ``call.function.arguments`` as sent: text, not
        validated).

    Raises:
        UsageError: ``toolcall.bad-argument``: a tool that is neither a ``Tool`` nor
            a string, or a message that is not a typed message.
    """
    names = _tool_names(tools)
    found = _message_list(messages)
    answered = {m.tool_call_id for m in found if isinstance(m, ToolMessage)}
    return [
        call
        for message in found
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls or ()
        if call.function.name in names and call.id not in answered
    ]


# ---- continuing the thread -----------------------------------------------------------------


def _answer_list(answers: Iterable[ToolMessage | Mapping[str, Any]]) -> list[ToolMessage]:
    """The answers as new typed tool messages (wire dicts parsed strictly, typed ones copied)."""
    _many(answers, "tool_results", (ToolMessage, Mapping))
    typed = []
    for index, answer in enumerate(answers):
        if not isinstance(answer, ToolMessage | Mapping):
            raise UsageError(
                "toolcall.bad-argument",
                f"tool_results[{index}] is a {type(answer).__name__}, not a ToolMessage "
                f"(or its wire JSON)",
            )
        wire = answer if isinstance(answer, ToolMessage) else dict(answer)
        try:
            typed.append(load_as(wire, ToolMessage))
        except SchemaError as exc:
            raise exc.at(f"/tool_results/{index}") from None
    return typed


def _check_answers(messages: Sequence[Message], answers: Sequence[ToolMessage]) -> None:
    calls = {
        call.id for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls or ()
    }
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    ids = {m.id for m in messages}
    for answer in answers:
        if answer.tool_call_id not in calls:
            raise UsageError(
                "toolcall.unknown-call",
                f"the tool message '{answer.id}' answers '{answer.tool_call_id}', a tool "
                f"call the conversation does not hold",
            )
        if answer.tool_call_id in answered:
            raise UsageError(
                "toolcall.already-answered",
                f"the tool call '{answer.tool_call_id}' already has an answer; a call is "
                f"answered once",
            )
        if answer.id in ids:
            raise UsageError(
                "toolcall.duplicate-id",
                f"the tool message '{answer.id}' reuses the id of another message",
            )
        answered.add(answer.tool_call_id)
        ids.add(answer.id)


def _place(messages: list[Message], answer: ToolMessage) -> None:
    """Insert ``answer`` after the assistant message holding its call and the tool
    messages already following it (where TOOL_CALL_RESULT puts its tool message)."""
    for index, message in enumerate(messages):
        if isinstance(message, AssistantMessage) and any(
            call.id == answer.tool_call_id for call in message.tool_calls or ()
        ):
            at = index + 1
            while at < len(messages) and isinstance(messages[at], ToolMessage):
                at += 1
            messages.insert(at, answer)
            return


def with_tool_answers(
    messages: list[Message],
    tools: Iterable[Tool | str],
    answers: Iterable[ToolMessage | Mapping[str, Any]] = (),
) -> list[Message]:
    """``messages`` with ``answers`` in place, once every call to a declared tool is answered.

    Args:
        messages: the next input's messages (typed; not changed).
        tools: the tools the client declares.
        answers: tool messages (typed or wire JSON), one per call they answer.

    Returns:
        A new list: each answer right after the assistant message holding its call
        (and the tool messages already following it).

    Raises:
        UsageError: ``toolcall.unanswered`` (the calls left unanswered, listed by id),
            or an answer that does not fit (see the module's codes).
        SchemaError: a wire answer that is not a tool message.
    """
    names = _tool_names(tools)
    given = _answer_list(answers)
    _check_answers(messages, given)
    result = list(messages)
    for answer in given:
        _place(result, answer)
    left = unanswered_tool_calls(result, names)
    if left:
        raise UsageError(
            "toolcall.unanswered",
            f"the thread has unanswered calls to the client's tools: {_quoted(c.id for c in left)}"
            f"; a thread that continues answers every one first (a tool message per call, "
            f"with 'error' set for a failure or a declined call): pass them as tool_results",
        )
    return result


# ---- running the application's functions ------------------------------------------------------


def _plan(
    messages: Conversation | Iterable[Message],
    tools: Iterable[Tool | str],
    functions: Mapping[str, ToolFunction],
) -> list[tuple[ToolCall, ToolFunction]]:
    """Each unanswered call with its function, every one checked before anything runs."""
    if not isinstance(functions, Mapping):
        raise UsageError(
            "toolcall.bad-argument",
            f"functions map tool names to functions, not a {type(functions).__name__}",
        )
    calls = unanswered_tool_calls(messages, tools)
    missing = sorted({c.function.name for c in calls if c.function.name not in functions})
    if missing:
        raise UsageError(
            "toolcall.no-function",
            f"no function is given for the tools {_quoted(missing)}, which have calls to "
            f"answer; nothing was run",
        )
    plan = [(call, functions[call.function.name]) for call in calls]
    for call, function in plan:
        if not callable(function):
            raise UsageError(
                "toolcall.bad-argument",
                f"the function for '{call.function.name}' is a {type(function).__name__}, "
                f"not a callable",
            )
    return plan


def _arguments(call: ToolCall) -> dict[str, Any] | str:
    """The call's arguments as a JSON object, or why they are not one."""
    text = call.function.arguments
    if not text.strip():
        return {}  # a call that takes no arguments
    try:
        value = loads(text)
    except DecodeError as exc:
        return f"the arguments are not valid JSON: {exc}"
    if not isinstance(value, dict):
        return f"the arguments are not a JSON object (got {type(value).__name__})"
    return value


def _is_async(function: ToolFunction) -> bool:
    call = getattr(function, "__call__", None)  # noqa: B004 - an object's async __call__
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(call)


def _content(result: Any) -> str | list[ContentPart]:
    """A function's return value as tool message content (``SchemaError`` if not JSON)."""
    if isinstance(result, str):
        return result
    if isinstance(result, list) and result and all(isinstance(p, _PARTS) for p in result):
        parts: list[ContentPart] = load_as(result, list[ContentPart])
        return parts
    return json_text(result)


def _message(
    call: ToolCall, new_id: Callable[[str], str], content: Any = "", error: str | None = None
) -> ToolMessage:
    return ToolMessage(id=new_id("tool-result"), tool_call_id=call.id, content=content, error=error)


def _failed(call: ToolCall, exc: Exception, new_id: Callable[[str], str]) -> ToolMessage:
    name = call.function.name
    _logger.warning("the function for tool '%s' (call '%s') raised", name, call.id, exc_info=exc)
    return _message(call, new_id, error=f"the tool failed: {type(exc).__name__}: {exc}")


def _returned(call: ToolCall, result: Any, new_id: Callable[[str], str]) -> ToolMessage:
    try:
        return _message(call, new_id, _content(result))
    except SchemaError as exc:
        return _message(call, new_id, error=f"the tool returned a value that is not JSON: {exc}")


def answer_tool_calls(
    messages: Conversation | Iterable[Message],
    tools: Iterable[Tool | str],
    functions: Mapping[str, ToolFunction],
    *,
    new_id: Callable[[str], str] | None = None,
) -> list[ToolMessage]:
    """Run the application's functions for the unanswered calls to declared tools.

    Each call's arguments are parsed (empty text means no arguments) and passed as
    keyword arguments, in conversation order. Every call gets one tool message, a
    failure included: arguments that are not a JSON object, a function that raises
    (also logged, with its traceback, on the ``agentproto.agui`` logger) or returns
    something that is not JSON give a message with empty ``content`` and ``error``
    saying why. Give the result to ``next_run_input(..., tool_results=...)``.

    Args:
        messages: the conversation (or typed messages) holding the calls.
        tools: the tools the client declared.
        functions: a function per tool name (plain functions; see
            :func:`aanswer_tool_calls` for ``async def`` ones).
        new_id: makes each tool message's id from the prefix ``"tool-result"``
            (default ``f"tool-result-{uuid4().hex}"``).

    Returns:
        One tool message per call answered, in call order.

    Raises:
        UsageError: ``toolcall.no-function`` (a declared tool with calls and no
            function), ``toolcall.async-function``, ``toolcall.bad-argument``; raised
            before any function runs.
    """
    plan = _plan(messages, tools, functions)
    for call, function in plan:
        if _is_async(function):
            raise UsageError(
                "toolcall.async-function",
                f"the function for '{call.function.name}' is async: use "
                f"aanswer_tool_calls(); nothing was run",
            )
    make_id = new_id if new_id is not None else _random_id
    return [_answer_one(call, function, make_id) for call, function in plan]


class _Returned:
    """What a function returned (perhaps an awaitable still to await)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _invoke(
    call: ToolCall, function: ToolFunction, make_id: Callable[[str], str]
) -> ToolMessage | _Returned:
    """Call ``function`` with the call's arguments: what it returned, or the failure's
    tool message (arguments that are not a JSON object, an exception)."""
    arguments = _arguments(call)
    if isinstance(arguments, str):
        return _message(call, make_id, error=arguments)
    try:
        return _Returned(function(**arguments))
    except Exception as exc:
        return _failed(call, exc, make_id)


def _answer_one(
    call: ToolCall, function: ToolFunction, make_id: Callable[[str], str]
) -> ToolMessage:
    outcome = _invoke(call, function, make_id)
    if isinstance(outcome, ToolMessage):
        return outcome
    if inspect.isawaitable(outcome.value):
        _close(outcome.value)
        raise UsageError(
            "toolcall.async-function",
            f"the function for '{call.function.name}' returned an awaitable: use "
            f"aanswer_tool_calls()",
        )
    return _returned(call, outcome.value, make_id)


def _close(awaitable: Awaitable[Any]) -> None:
    """Close a coroutine that will never be awaited (no "never awaited" warning)."""
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


async def aanswer_tool_calls(
    messages: Conversation | Iterable[Message],
    tools: Iterable[Tool | str],
    functions: Mapping[str, ToolFunction],
    *,
    new_id: Callable[[str], str] | None = None,
) -> list[ToolMessage]:
    """:func:`answer_tool_calls` for plain and ``async def`` functions alike.

    The calls run one after the other, in call order; a function's awaitable result
    is awaited. Failures become tool messages with ``error`` set, as for
    :func:`answer_tool_calls`; cancellation propagates.

    Raises:
        UsageError: ``toolcall.no-function`` or ``toolcall.bad-argument``, before
            any function runs.
    """
    plan = _plan(messages, tools, functions)
    make_id = new_id if new_id is not None else _random_id
    return [await _aanswer_one(call, function, make_id) for call, function in plan]


async def _aanswer_one(
    call: ToolCall, function: ToolFunction, make_id: Callable[[str], str]
) -> ToolMessage:
    outcome = _invoke(call, function, make_id)
    if isinstance(outcome, ToolMessage):
        return outcome
    value = outcome.value
    if inspect.isawaitable(value):
        try:
            value = await value
        except Exception as exc:
            return _failed(call, exc, make_id)
    return _returned(call, value, make_id)


# ---- the agent side ----------------------------------------------------------------------------


def refuse_client_tool_answers(
    event: g.Event, conversation: Conversation, run_input: RunAgentInput | None
) -> None:
    """Refuse an event by which a producer would answer a call to a client's tool.

    Args:
        event: the event about to be emitted.
        conversation: what the client holds (the producer's copy).
        run_input: the run input whose ``tools`` are the client's.

    Raises:
        UsageError: ``producer.client-tool-answered``: a TOOL_CALL_RESULT for a call to
            one of the input's tools, or a MESSAGES_SNAPSHOT carrying a tool message
            that answers such a call the client has not answered itself.
    """
    if run_input is None or not run_input.tools:
        return
    if isinstance(event, g.ToolCallResultEvent):
        call = conversation.tool_call(event.tool_call_id)
        names = _tool_names(run_input.tools)
        if call is not None and call.function.name in names:
            raise _answered(event.type, call)
    elif isinstance(event, g.MessagesSnapshotEvent):
        incoming = [m for m in event.messages if not isinstance(m, ToolMessage)]
        held = [*conversation.messages, *incoming]
        open_calls = {c.id: c for c in unanswered_tool_calls(held, run_input.tools)}
        for message in event.messages:
            if isinstance(message, ToolMessage) and message.tool_call_id in open_calls:
                raise _answered(event.type, open_calls[message.tool_call_id])


def _answered(kind: str, call: ToolCall) -> UsageError:
    return UsageError(
        "producer.client-tool-answered",
        f"{kind} answers the call '{call.id}' to '{call.function.name}', a tool the run "
        f"input's tools declare: the client executes its own tools and answers in the "
        f"next run's messages, so finish the run with the call unanswered",
    )


def pending_outcome(outcome: Any, unanswered: list[str]) -> Any:
    """A RUN_FINISHED outcome naming the run's unanswered calls in ``pendingToolCallIds``.

    Args:
        outcome: the typed outcome the caller chose (``None``: success).
        unanswered: the calls the run started and did not answer, in the order made.

    Returns:
        A success outcome listing them, or ``outcome`` itself when there are none.

    Raises:
        UsageError: ``producer.bad-argument``: the outcome is not a success (the list
            rides only on it), or it already names its own list.
    """
    if outcome is not None and not isinstance(outcome, g.RunFinishedSuccessOutcome):
        raise UsageError(
            "producer.bad-argument",
            f"list_pending applies to a success outcome, not {outcome.type!r}: "
            f"pendingToolCallIds rides only on the success outcome",
        )
    if outcome is not None and outcome.pending_tool_call_ids:
        raise UsageError(
            "producer.bad-argument",
            "list_pending=True derives pendingToolCallIds: do not also give the list",
        )
    if not unanswered:
        return outcome
    return g.RunFinishedSuccessOutcome(
        pending_tool_call_ids=list(unanswered),
    )
