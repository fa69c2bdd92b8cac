"""The frontend tool round trip's API: listing the client's unanswered calls and running the
application's functions into tool messages (issue 10, "Frontend tool round trip")."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest

from agentproto import UsageError
from agentproto.agui import (
    Consumer,
    aanswer_tool_calls,
    answer_tool_calls,
    next_run_input,
    schema,
    unanswered_tool_calls,
)
from tests.docblocks import run_doc_block

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r1"}


def _call(call_id: str, name: str, arguments: str) -> list[dict[str, Any]]:
    return [
        {"type": "TOOL_CALL_START", "toolCallId": call_id, "toolCallName": name,
         "parentMessageId": "m1"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": arguments},
        {"type": "TOOL_CALL_END", "toolCallId": call_id},
    ]  # fmt: skip


def _conversation(*calls: tuple[str, str, str], answered: tuple[str, ...] = ()) -> Any:
    consumer = Consumer()
    events: list[dict[str, Any]] = [START]
    for call in calls:
        events += _call(*call)
    events += [
        {"type": "TOOL_CALL_RESULT", "messageId": f"r-{i}", "toolCallId": i, "content": "x"}
        for i in answered
    ]
    consumer.feed_all([*events, FINISH])
    consumer.close()
    return consumer.conversation


def _ids() -> Any:
    counter = itertools.count(1)
    return lambda prefix: f"{prefix}-{next(counter)}"


# ---- unanswered_tool_calls -------------------------------------------------------------------


def test_unanswered_lists_declared_calls_without_a_tool_message() -> None:
    """Only calls to declared tools, not answered, in conversation order, as held."""
    conversation = _conversation(
        ("c1", "confirm", '{"a": 1}'), ("c2", "search", "{}"), ("c3", "pick", "{"),
        ("c4", "confirm", "{}"), answered=("c4",),
    )  # fmt: skip
    tools = [schema.Tool(name="confirm", description="d"), "pick"]
    calls = unanswered_tool_calls(conversation, tools)
    assert [(c.id, c.function.name, c.function.arguments) for c in calls] == [
        ("c1", "confirm", '{"a": 1}'),
        ("c3", "pick", "{"),
    ]
    assert unanswered_tool_calls(conversation.messages, ["confirm"])[0].id == "c1"
    assert unanswered_tool_calls(conversation, []) == []


@pytest.mark.parametrize(
    ("messages", "tools"),
    [
        ([{"id": "m", "role": "user", "content": "hi"}], []),
        ([], [None]),
        ([], schema.Tool(name="f", description="d")),
        ([], "confirm"),
        (None, []),
        (schema.UserMessage(id="u", content="hi"), []),
    ],
)
def test_unanswered_refuses_what_is_not_typed(messages: Any, tools: Any) -> None:
    """Wire dicts for messages, or a tool that is no Tool nor name, are a UsageError."""
    with pytest.raises(UsageError) as info:
        unanswered_tool_calls(messages, tools)
    assert info.value.code == "toolcall.bad-argument"


# ---- answer_tool_calls -------------------------------------------------------------------------


def test_functions_answer_each_call_with_its_arguments() -> None:
    """Each call's JSON object arguments become keyword arguments; the result its content."""
    conversation = _conversation(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "hello", ""))
    answers = answer_tool_calls(
        conversation,
        ["add", "hello"],
        {"add": lambda a, b: {"sum": a + b}, "hello": lambda: "hi"},
        new_id=_ids(),
    )
    assert [(m.id, m.tool_call_id, m.content, m.error) for m in answers] == [
        ("tool-result-1", "c1", '{"sum":3}', None),
        ("tool-result-2", "c2", "hi", None),
    ]
    run_input = next_run_input(
        conversation, thread_id="t", run_id="r2", tools=["add", "hello"], tool_results=answers
    )
    assert [m.id for m in run_input.messages] == ["m1", "tool-result-1", "tool-result-2"]


def test_content_parts_are_kept_as_parts() -> None:
    """A list of typed content parts is the message's content, not its JSON text."""
    conversation = _conversation(("c1", "shot", "{}"))
    part = schema.TextPart(text="a screenshot")
    [answer] = answer_tool_calls(conversation, ["shot"], {"shot": lambda: [part]})
    assert answer.content == [part] and answer.error is None
    [plain] = answer_tool_calls(conversation, ["shot"], {"shot": lambda: [1, 2]})
    assert plain.content == "[1,2]"


@pytest.mark.parametrize(
    ("arguments", "function", "error"),
    [
        ('{"a": ', lambda **kw: "x", "the arguments are not valid JSON"),
        ("[1, 2]", lambda **kw: "x", "the arguments are not a JSON object (got list)"),
        ("{}", lambda: 1 / 0, "the tool failed: ZeroDivisionError: division by zero"),
        ('{"z": 1}', lambda: "x", "the tool failed: TypeError"),
        ("{}", lambda: {1, 2}, "the tool returned a value that is not JSON"),
        ("{}", lambda: float("nan"), "the tool returned a value that is not JSON"),
    ],
)
def test_a_failure_is_still_an_answer(arguments: str, function: Any, error: str) -> None:
    """Bad arguments, a raising function or a non-JSON result give a tool message with
    ``error`` set and empty content; the other calls are answered as usual."""
    conversation = _conversation(("c1", "f", arguments), ("c2", "g", "{}"))
    answers = answer_tool_calls(conversation, ["f", "g"], {"f": function, "g": lambda: "ok"})
    assert [a.tool_call_id for a in answers] == ["c1", "c2"]
    assert answers[0].content == "" and answers[0].error is not None
    assert answers[0].error.startswith(error)
    assert (answers[1].content, answers[1].error) == ("ok", None)


def test_a_raising_function_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    """The traceback of a raising tool goes to the agentproto.agui logger."""

    def broken() -> str:
        raise RuntimeError("boom")

    conversation = _conversation(("c1", "f", "{}"))
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        answer_tool_calls(conversation, ["f"], {"f": broken})
    assert "'c1'" in caplog.text and "RuntimeError: boom" in caplog.text


def test_a_declared_tool_without_a_function_runs_nothing() -> None:
    """A missing function is refused before any function runs."""
    ran: list[str] = []
    conversation = _conversation(("c1", "f", "{}"), ("c2", "g", "{}"))
    with pytest.raises(UsageError) as info:
        answer_tool_calls(conversation, ["f", "g"], {"f": lambda: ran.append("f")})
    assert info.value.code == "toolcall.no-function" and "'g'" in str(info.value)
    assert ran == []


@pytest.mark.parametrize("functions", [{"f": "not a function"}, ["f"], None])
def test_functions_that_are_not_a_table_of_callables_are_refused(functions: Any) -> None:
    """The functions are a mapping from tool names to callables."""
    conversation = _conversation(("c1", "f", "{}"))
    with pytest.raises(UsageError) as info:
        answer_tool_calls(conversation, ["f"], functions)
    assert info.value.code == "toolcall.bad-argument"


def test_the_sync_helper_refuses_async_functions() -> None:
    """An async function is refused up front; one returning an awaitable when called."""
    ran: list[str] = []

    async def later() -> str:
        return "x"

    def sneaky() -> Any:
        return later()

    conversation = _conversation(("c1", "f", "{}"), ("c2", "g", "{}"))
    with pytest.raises(UsageError) as info:
        answer_tool_calls(conversation, ["f", "g"], {"f": lambda: ran.append("f"), "g": later})
    assert info.value.code == "toolcall.async-function" and ran == []
    with pytest.raises(UsageError) as info:
        answer_tool_calls(conversation, ["f"], {"f": sneaky})
    assert info.value.code == "toolcall.async-function"


def test_the_async_helper_awaits_async_functions() -> None:
    """aanswer_tool_calls runs plain and async functions, failures included, in order."""

    async def double(n: int) -> int:
        await asyncio.sleep(0)
        return n * 2

    async def broken() -> str:
        raise ValueError("no")

    conversation = _conversation(
        ("c1", "double", '{"n": 21}'), ("c2", "echo", '{"s": "hi"}'), ("c3", "broken", "{}"),
        ("c4", "double", "nope"),
    )  # fmt: skip
    answers = asyncio.run(
        aanswer_tool_calls(
            conversation,
            ["double", "echo", "broken"],
            {"double": double, "echo": lambda s: s, "broken": broken},
        )
    )
    assert [(a.tool_call_id, a.content) for a in answers] == [
        ("c1", "42"), ("c2", "hi"), ("c3", ""), ("c4", ""),
    ]  # fmt: skip
    assert answers[2].error == "the tool failed: ValueError: no"
    assert answers[3].error is not None and "not valid JSON" in answers[3].error


def test_the_async_helper_lets_cancellation_through() -> None:
    """A cancelled tool cancels the helper; it is not turned into an answer."""

    async def hang() -> str:
        raise asyncio.CancelledError

    conversation = _conversation(("c1", "f", "{}"))
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(aanswer_tool_calls(conversation, ["f"], {"f": hang}))


def test_only_unanswered_declared_calls_are_run() -> None:
    """A call already answered, or to an undeclared tool, is not run again."""
    ran: list[str] = []
    conversation = _conversation(("c1", "f", "{}"), ("c2", "f", "{}"), answered=("c1",))
    answers = answer_tool_calls(conversation, ["f"], {"f": lambda: ran.append("f") or "ok"})
    assert [a.tool_call_id for a in answers] == ["c2"] and ran == ["f"]
    assert answer_tool_calls(conversation, [], {"f": lambda: "ok"}) == []


# ---- the docs -----------------------------------------------------------------------------------


def test_guide_frontend_tools_example_runs_as_written() -> None:
    """The client authors' guide's "Frontend tools" example runs, and shows what it says."""
    namespace = run_doc_block("docs/guides/client-authors.md", "Frontend tools")
    assert [c.id for c in namespace["calls"]] == ["call-1"]
    [answer] = namespace["answers"]
    assert answer.tool_call_id == "call-1" and answer.content == '{"confirmed":true}'
    assert [m.role for m in namespace["next_input"].messages] == ["user", "assistant", "tool"]
    assert namespace["refused"] == "producer.client-tool-answered"
