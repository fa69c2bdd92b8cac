"""Untrusted values in messages: bounded time and size, never a failure of their own."""

from __future__ import annotations

import functools
from typing import Any

import pytest

from agentproto import AgentProtoError, SchemaError
from agentproto._core.describe import cut_pointer, describe


def _deep(depth: int) -> Any:
    return functools.reduce(lambda value, _: [value], range(depth), 0)


def test_describe_huge_int_and_deep_list_without_repr() -> None:
    """An integer over 4,300 digits and a list 10,000 deep are described, not repr'd."""
    assert describe(10**5000) == "an integer of about 5001 digits"
    assert describe(_deep(10_000)) == "an array of 1 item(s)"
    assert describe({"a": 1}) == "an object of 1 member(s)"


def test_describe_cuts_long_strings_and_shows_scalars() -> None:
    """Strings are cut after 40 characters; small scalars are shown as they are."""
    assert describe("x" * 1000) == "'" + "x" * 40 + "...'"
    assert describe("abc") == "'abc'"
    assert [describe(v) for v in (None, True, 12, 1.5)] == ["None", "True", "12", "1.5"]
    assert describe({1, 2}) == "a set"


def test_long_locations_keep_both_ends() -> None:
    """A location of 20 KB is cut in the middle to at most 200 characters."""
    pointer = "/0" * 10_000
    assert len(cut_pointer(pointer)) <= 200
    error = SchemaError("type", pointer + "/end", "bad")
    assert len(error.location) <= 200 and error.location.endswith("/end")
    assert len(str(error)) < 300


@pytest.mark.parametrize("bad", [10**5000, _deep(900)], ids=["huge-int", "deep-list"])
def test_schema_errors_quote_hostile_values_safely(bad: Any) -> None:
    """A huge int or deep list where an enum, tag or const is expected gives an SDK error."""
    from agentproto.acp import parse_session_update
    from agentproto.agui import parse_event

    for doc in (
        {"type": bad},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": bad},
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "protocolVersion": bad},
    ):
        try:
            parse_event(doc)
        except AgentProtoError as exc:
            assert len(str(exc)) < 2000
    with pytest.raises(AgentProtoError):
        parse_session_update({"sessionUpdate": bad})


def test_diagnostic_paths_are_bounded() -> None:
    """An unknown property with a 100 KB name is reported with a short path and message."""
    from agentproto._core.diagnostics import Diagnostic
    from agentproto.agui import parse_event

    found: list[Diagnostic] = []
    parse_event(
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r", "k" * 100_000: 1}, diagnostics=found
    )
    assert found and all(len(d.path or "") <= 200 and len(d.message) < 300 for d in found)
