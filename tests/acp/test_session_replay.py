"""Replay: a recorded update log gives the same state as live delivery, stale metadata kept."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import AgentProtoError, SchemaError
from agentproto.acp import (
    SessionState,
    SessionStore,
    dump_session_update,
    encode_message,
    parse_session_update,
    session_notification,
)
from tests.acp.acp_updates import updates

LOG = [
    {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Read", "_meta": {"a": 1}},
    {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m",
        "content": {"type": "text", "text": "x"},
    },
    {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YWI="},
    {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "status": "completed",
        "_meta": {"b": 2},
    },
    {"sessionUpdate": "compaction_update", "compactionId": "k", "status": "in_progress"},
    {"sessionUpdate": "plan_update", "plan": {"type": "markdown", "planId": "p", "content": "# P"}},
    {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"a": None}},
]


def parsed(log: list[dict[str, Any]]) -> list[Any]:
    return [parse_session_update(obj) for obj in log]


def test_replay_equals_live_delivery_one_by_one() -> None:
    """replay(log) gives exactly the state of applying the same updates one at a time."""
    live = SessionState("s")
    for item in parsed(LOG):
        live.apply(item)
    replayed = SessionState("s")
    replayed.replay(parsed(LOG))
    assert replayed == live
    assert replayed.to_json() == live.to_json()
    assert replayed.tool_calls["c1"].meta == {"b": 2}


def test_replay_over_stale_metadata_keeps_keys_the_log_does_not_remove() -> None:
    """Replay never resets metadata: keys a client already held survive unless removed."""
    client = SessionState()
    client.apply(
        parse_session_update(
            {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"stale": 1, "a": 0}}
        )
    )
    client.replay(parsed(LOG))
    assert client.tool_calls["c1"].meta == {"stale": 1, "b": 2}


def test_replaying_the_original_updates_from_nothing_reproduces_the_metadata() -> None:
    """With their removals kept, the original updates rebuild the stored metadata exactly."""
    sender = SessionState()
    sender.replay(parsed(LOG))
    fresh = SessionState()
    fresh.replay(parsed(LOG))
    assert fresh.tool_calls["c1"].meta == sender.tool_calls["c1"].meta == {"b": 2}


def test_replay_stops_at_the_first_bad_update() -> None:
    """A bad update in the log raises (noting its index); the updates before it stay applied."""
    log = [
        *LOG[:2],
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "!"},
        *LOG[2:],
    ]
    state = SessionState()
    with pytest.raises(SchemaError) as caught:
        state.replay(parsed(log))
    assert "update 2 of the replayed log" in (caught.value.__notes__ or [])
    expected = SessionState()
    expected.replay(parsed(LOG[:2]))
    assert state == expected


def ndjson(session_id: str, items: list[Any]) -> bytes:
    return b"".join(encode_message(session_notification(session_id, item)) for item in items)


@given(st.lists(updates, max_size=12), st.data())
@settings(max_examples=300)
def test_replay_equals_live_ndjson_delivery(items: list[Any], data: st.DataObject) -> None:
    """The log delivered live as NDJSON in arbitrary chunks gives the state replay gives."""
    stream = ndjson("s", items)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=6)))
    store = SessionStore()
    start = 0
    for cut in [*cuts, len(stream)]:
        store.feed(stream[start:cut])
        start = cut
    store.close()
    replayed = SessionState("s")
    for item in items:  # replay, skipping what the store reported and skipped
        with contextlib.suppress(AgentProtoError):
            replayed.replay([item])
    live = store.sessions.get("s", SessionState("s"))
    assert live == replayed
    assert orjson.dumps(live.to_json()) == orjson.dumps(replayed.to_json())


@given(st.lists(updates, max_size=10))
@settings(max_examples=200)
def test_dumped_updates_replay_to_the_same_state(items: list[Any]) -> None:
    """Updates dumped to JSON and parsed back replay to the same state: nothing lost on the wire."""
    direct = SessionState()
    again = SessionState()
    for item in items:
        copied = parse_session_update(
            orjson.loads(orjson.dumps(dump_session_update(item))), diagnostics=[]
        )
        for state, update in ((direct, item), (again, copied)):
            with contextlib.suppress(AgentProtoError):
                state.apply(update)
    assert direct == again


def test_replay_does_not_mutate_the_log() -> None:
    """Replaying a log leaves the updates in it unchanged (chunks never grow them)."""
    log = parsed(
        [
            {"sessionUpdate": "user_message", "messageId": "m", "content": []},
            {
                "sessionUpdate": "user_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": "a"},
            },
        ]
    )
    before = copy.deepcopy(log)
    SessionState().replay(log)
    assert log == before
