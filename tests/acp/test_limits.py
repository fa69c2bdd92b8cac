"""Limits of what an ACP session and a store keep: refused atomically, named in the error."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from agentproto import LimitError, UsageError
from agentproto.acp import SessionState, SessionStore, parse_session_update
from tests.acp.acp_updates import update_line


def _update(tag: str, **fields: Any) -> Any:
    return parse_session_update({"sessionUpdate": tag, **fields})


def _call(ident: str, **fields: Any) -> Any:
    return _update("tool_call_update", toolCallId=ident, title=f"call {ident}", **fields)


NEW_ITEMS = {
    "tool call": lambda: _call("extra"),
    "message chunk": lambda: _update(
        "agent_message_chunk", messageId="m9", content={"type": "text", "text": "x"}
    ),
    "terminal output": lambda: _update("terminal_output", terminalId="t9", data="aGk="),
    "plan": lambda: _update("plan_update", plan={"type": "items", "planId": "p9", "entries": []}),
    "notice": lambda: _update("notice", severity="info", title="hello"),
    "unknown kind": lambda: parse_session_update({"sessionUpdate": "brand_new", "x": 1}),
}


@pytest.mark.parametrize("make", NEW_ITEMS.values(), ids=NEW_ITEMS.keys())
def test_one_more_item_is_refused_and_nothing_changes(make: Any) -> None:
    state = SessionState("s1", max_entities=2)
    state.apply(_call("a"))
    state.apply(_call("b"))
    before = copy.deepcopy(state.to_json())
    keys, unknown = state.keys(), list(state.unknown)
    with pytest.raises(LimitError) as caught:
        state.apply(make())
    assert caught.value.limit == "max_entities"
    assert caught.value.value == 2
    assert "max_entities=2" in str(caught.value)
    assert state.to_json() == before
    assert state.keys() == keys
    assert state.unknown == unknown


def test_kept_entities_still_update_at_the_limit() -> None:
    state = SessionState("s1", max_entities=1)
    state.apply(_call("a"))
    state.apply(_call("a", status="completed", _meta={"k": 1}))
    assert state.tool_calls["a"].status == "completed"
    assert state.tool_calls["a"].meta == {"k": 1}


def test_the_error_does_not_repeat_a_huge_id() -> None:
    state = SessionState("s" * 100_000, max_entities=1)
    state.apply(_call("a"))
    with pytest.raises(LimitError) as caught:
        state.apply(_call("x" * 100_000))
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_a_limit_must_be_a_positive_integer(bad: Any) -> None:
    with pytest.raises(UsageError):
        SessionState(max_entities=bad)
    with pytest.raises(UsageError):
        SessionStore(max_entities=bad)
    with pytest.raises(UsageError):
        SessionStore(max_sessions=bad)


def test_no_limit_when_none() -> None:
    state = SessionState("s1", max_entities=None)
    for index in range(50):
        state.apply(_call(str(index)))
    assert len(state.tool_calls) == 50


def _calls_stream(session: str, count: int) -> bytes:
    return b"".join(
        update_line(
            {"sessionUpdate": "tool_call_update", "toolCallId": f"c{i}", "title": "t"}, session
        )
        for i in range(count)
    )


def test_tolerant_store_skips_past_the_entity_limit_with_a_diagnostic() -> None:
    store = SessionStore(max_entities=3)
    store.feed(_calls_stream("s1", 5))
    store.close()
    assert list(store.sessions["s1"].tool_calls) == ["c0", "c1", "c2"]
    skipped = [d for d in store.diagnostics if d.code == "invalid-update"]
    assert [d.line for d in skipped] == [4, 5]  # the lines of the log
    assert all("max_entities=3" in d.message for d in skipped)


def test_strict_store_raises_at_the_entity_limit_and_goes_on_after_it() -> None:
    store = SessionStore(strict=True, max_entities=2)
    with pytest.raises(LimitError) as caught:
        store.feed(_calls_stream("s1", 3) + _calls_stream("s1", 1))
    assert caught.value.limit == "max_entities"
    assert any("line 3" in note for note in caught.value.__notes__)
    store.close()  # the line after the refused one is read: c0 again, an update
    assert list(store.sessions["s1"].tool_calls) == ["c0", "c1"]


def test_store_session_limit() -> None:
    store = SessionStore(max_sessions=2)
    store.feed(b"".join(_calls_stream(f"s{i}", 1) for i in range(4)))
    store.close()
    assert list(store.sessions) == ["s0", "s1"]
    messages = [d.message for d in store.diagnostics if d.code == "invalid-update"]
    assert len(messages) == 2 and all("max_sessions=2" in m for m in messages)
    strict = SessionStore(strict=True, max_sessions=1)
    strict.feed(_calls_stream("a", 1))
    with pytest.raises(LimitError) as caught:
        strict.feed(_calls_stream("b", 1))
    assert caught.value.limit == "max_sessions"
    assert list(strict.sessions) == ["a"]


def test_permission_request_for_one_session_too_many_is_skipped() -> None:
    store = SessionStore(max_sessions=1)
    store.feed(_calls_stream("a", 1))
    request = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "session/request_permission",
        "params": {
            "sessionId": "b",
            "title": "Run it?",
            "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
            "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
        },
    }
    store.feed(orjson.dumps(request) + b"\n")
    store.close()
    assert list(store.sessions) == ["a"]
    assert any("max_sessions" in d.message for d in store.diagnostics)


def test_defaults_are_documented_values() -> None:
    from agentproto.acp._state.session import DEFAULT_MAX_ENTITIES
    from agentproto.acp._state.store import DEFAULT_MAX_SESSIONS

    store = SessionStore()
    assert store.max_entities == DEFAULT_MAX_ENTITIES
    assert store.max_sessions == DEFAULT_MAX_SESSIONS
    assert store.session("s").max_entities == DEFAULT_MAX_ENTITIES
