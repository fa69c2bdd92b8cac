"""Hostile input from Python: the depth limit and JSON-ness checked on entry; any failure fails."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentproto import AgentProtoError, DecodeError, SchemaError, UsageError
from agentproto._core.errors import InternalError
from agentproto.agui import Consumer, parse_event, parse_run_input

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def _deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_feed_json_checks_the_depth_limit() -> None:
    """A 600-deep state snapshot fed as a dict fails on entry, naming the limit."""
    consumer = Consumer()
    consumer.feed_json(START)
    with pytest.raises(DecodeError, match="512"):
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": _deep(600)})
    assert consumer.failure is not None
    assert consumer.verifier.runs[-1].status != "finished"


@pytest.mark.parametrize(
    "bad", [math.nan, {1, 2}, b"x", {1: "a"}], ids=["nan", "set", "bytes", "key"]
)
def test_feed_json_refuses_non_json_values(bad: Any) -> None:
    """NaN, sets, bytes and non-string keys in state are refused when they enter."""
    consumer = Consumer()
    consumer.feed_json(START)
    with pytest.raises(SchemaError, match="event 1"):
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"a": bad}})
    assert consumer.failure is not None


def test_parse_functions_check_depth_of_dicts() -> None:
    """parse_event and parse_run_input given dicts apply the same 512 limit as bytes."""
    with pytest.raises(DecodeError, match="512"):
        parse_event({"type": "STATE_SNAPSHOT", "snapshot": _deep(1200)})
    with pytest.raises(DecodeError, match="512"):
        parse_run_input({"threadId": "t", "runId": "r", "state": _deep(1200)})
    with pytest.raises(DecodeError, match="512"):
        Consumer(run_input={"threadId": "t", "runId": "r", "state": _deep(1200)})
    assert parse_event({"type": "STATE_SNAPSHOT", "snapshot": _deep(500)}).snapshot


def test_run_input_of_another_type_is_a_usage_error() -> None:
    """A run input that is neither typed nor a dict is refused with a UsageError."""
    with pytest.raises(UsageError):
        Consumer(run_input=1.5)  # type: ignore[arg-type]


def test_unexpected_exception_fails_the_stream() -> None:
    """A non-SDK exception in a stage fails the run and surfaces as InternalError with its cause."""

    def broken(event: dict[str, Any]) -> dict[str, Any]:
        if event["type"] == "STATE_SNAPSHOT":
            raise KeyError("bug")
        return event

    consumer = Consumer(middleware=[broken])
    consumer.feed_json(START)
    with pytest.raises(InternalError) as info:
        consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {}})
    assert isinstance(info.value, AgentProtoError)
    assert isinstance(info.value.__cause__, KeyError)
    assert consumer.failure is info.value
    assert consumer.verifier.runs[-1].status == "failed"
    with pytest.raises(UsageError):
        consumer.feed_json(FINISH)
