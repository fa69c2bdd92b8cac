"""``SessionStore``: whole JSON-RPC messages, sessions keyed by id, problems as diagnostics."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from agentproto import DecodeError, SchemaError, UsageError
from agentproto._core.json.codec import dumps
from agentproto.acp import Notification, Request, Response, SessionStore
from tests.acp.acp_updates import tool_update as tool
from tests.acp.acp_updates import update_line as update


def line(obj: Any) -> bytes:
    return dumps(obj) + b"\n"  # _core's: integers of any size, any depth


def permission(tool_call: dict[str, Any], ident: int = 1) -> bytes:
    return line(
        {
            "jsonrpc": "2.0",
            "id": ident,
            "method": "session/request_permission",
            "params": {
                "sessionId": "s1",
                "title": "Allow?",
                "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
                "subject": {"type": "tool_call", "toolCall": tool_call},
            },
        }
    )


def read(data: bytes, *, strict: bool = False) -> SessionStore:
    store = SessionStore(strict=strict)
    store.feed(data)
    store.close()
    return store


def codes(store: SessionStore) -> list[tuple[int | None, str, str | None]]:
    return [(d.line, d.code, d.path) for d in store.diagnostics]


def test_sessions_are_keyed_by_session_id() -> None:
    """Each sessionId has its own state, in first-seen order."""
    store = read(update(tool(title="A"), "s2") + update(tool(title="B"), "s1"))
    assert list(store.sessions) == ["s2", "s1"]
    assert store.sessions["s1"].tool_calls["c1"].title == "B"
    assert store.sessions["s2"].session_id == "s2"
    assert store.to_json()["sessions"]["s2"]["entities"]["tool_call:c1"]["title"] == "A"


def test_permission_request_patches_the_stored_tool_call() -> None:
    """A session/request_permission request's tool call patches the call like an update."""
    store = read(
        update(tool(title="Run", _meta={"a": 1}))
        + permission({"toolCallId": "c1", "status": "pending", "_meta": {"b": 2}})
    )
    call = store.sessions["s1"].tool_calls["c1"]
    assert (call.title, call.status, call.meta) == ("Run", "pending", {"a": 1, "b": 2})
    assert store.diagnostics == []


def test_other_messages_are_ignored_with_a_diagnostic() -> None:
    """Other methods and responses change nothing and are reported with their line."""
    data = (
        line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
        + line({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
        + line({"jsonrpc": "2.0", "id": 0, "result": {}})
        + update(tool())
    )
    store = read(data)
    assert codes(store) == [
        (1, "ignored-method", None),
        (2, "ignored-method", None),
        (3, "ignored-message", None),
    ]
    assert list(store.sessions) == ["s1"]


def test_a_log_problem_carries_its_line_not_an_event_index() -> None:
    """A diagnostic about a line of an NDJSON log carries the 1-based ``line``; ``index``
    (an event's position in a stream) stays unset."""
    data = update(tool(title="T")) + b"\n" + update({"sessionUpdate": "tool_call_update"})
    store = read(data)
    (diagnostic,) = store.diagnostics
    assert (diagnostic.line, diagnostic.index) == (3, None)


def test_invalid_params_are_skipped_with_a_located_diagnostic() -> None:
    """Params the parser cannot repair skip the message; the diagnostic has line and path."""
    data = (
        update(tool(title="T"))
        + update({"sessionUpdate": "tool_call_update"})
        + update(tool(status="completed"))
    )
    store = read(data)
    assert codes(store) == [(2, "invalid-params", "/params/update")]
    assert "toolCallId" in store.diagnostics[0].message
    assert store.sessions["s1"].tool_calls["c1"].status == "completed"


def test_tolerant_repairs_are_reported_and_the_rest_applied() -> None:
    """A wrong type in a patch field is dropped with a diagnostic; the other fields apply."""
    store = read(update(tool(title="T")) + update(tool(title=5, status="completed")))
    assert codes(store) == [(2, "invalid-field-defaulted", "/params/update/title")]
    call = store.sessions["s1"].tool_calls["c1"]
    assert (call.title, call.status) == ("T", "completed")


def test_bad_meta_on_the_wire_is_dropped_and_reported() -> None:
    """A ``_meta`` that is neither an object nor null is dropped, the update applied without it."""
    store = read(update(tool(_meta={"a": 1})) + update(tool(status="failed", _meta="oops")))
    assert codes(store) == [(2, "invalid-field-defaulted", "/params/update/_meta")]
    call = store.sessions["s1"].tool_calls["c1"]
    assert (call.status, call.meta) == ("failed", {"a": 1})


def test_invalid_base64_is_reported_and_changes_nothing() -> None:
    """An undecodable terminal chunk is skipped with a diagnostic; the state is unchanged."""
    ok = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "YQ=="}
    store = read(update(ok))
    before = copy.deepcopy(store.sessions["s1"])
    store = read(update(ok) + update({**ok, "data": "Y"}))
    assert codes(store) == [(2, "invalid-update", "/params/update/data")]
    assert store.sessions["s1"] == before


def test_unknown_kind_diagnostic_is_located() -> None:
    """An unknown sessionUpdate kind's diagnostic carries the line and the full path."""
    store = read(update(tool()) + update({"sessionUpdate": "_x"}))
    assert codes(store) == [(2, "unknown-session-update", "/params/update/sessionUpdate")]


def test_strict_store_raises_on_bad_messages() -> None:
    """A strict store raises SchemaError located from the message root, with the line noted."""
    with pytest.raises(SchemaError) as caught:
        read(update(tool()) + update(tool(title=5)), strict=True)
    assert caught.value.location == "/params/update/title"
    assert "line 2" in (caught.value.__notes__ or [])
    bad_chunk = {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "?"}
    with pytest.raises(SchemaError) as caught:
        read(update(bad_chunk), strict=True)
    assert (caught.value.keyword, caught.value.location) == (
        "contentEncoding",
        "/params/update/data",
    )


def test_bad_json_line_raises_with_its_line_and_the_store_goes_on() -> None:
    """A line that is not JSON raises DecodeError naming it; feeding again continues after it."""
    store = SessionStore()
    with pytest.raises(DecodeError) as caught:
        store.feed(update(tool(title="A")) + b"{oops\n" + update(tool(title="B")))
    assert caught.value.line == 2
    assert store.sessions["s1"].tool_calls["c1"].title == "A"
    store.feed(b"")
    store.close()
    assert store.sessions["s1"].tool_calls["c1"].title == "B"


def test_feeding_byte_by_byte_gives_the_same_state() -> None:
    """The same bytes fed whole or one byte at a time give the same sessions and diagnostics."""
    data = (
        update(tool(title="é", _meta={"a": 1}))
        + b"\r\n"
        + update({"sessionUpdate": "_x"}, "s2")
        + permission({"toolCallId": "c1", "status": "completed"})
        + update(tool(_meta={"a": None}))
    )
    whole = read(data)
    store = SessionStore()
    for i in range(len(data)):
        store.feed(data[i : i + 1])
    store.close()
    assert store.to_json() == whole.to_json()
    assert store.diagnostics == whole.diagnostics


def test_apply_message_takes_typed_messages() -> None:
    """Messages built by hand are applied like read ones; something else is a UsageError."""
    store = SessionStore()
    store.apply_message(
        Notification(
            "session/update",
            {"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "title": "T"}},
        )
    )
    store.apply_message(Response(3, result=None))
    store.apply_message(Request(4, "fs/read_text_file", {}))
    assert store.sessions["s"].session_info is not None
    assert [d.code for d in store.diagnostics] == ["ignored-message", "ignored-method"]
    with pytest.raises(UsageError):
        store.apply_message("not a message")  # type: ignore[arg-type]


def test_notification_with_extra_params_members_takes_the_general_path() -> None:
    """A notification with its own ``_meta`` is parsed whole and applied the same way."""
    store = read(
        line(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "s1", "update": tool(title="T"), "_meta": {"trace": 1}},
            }
        )
    )
    assert store.sessions["s1"].tool_calls["c1"].title == "T"
    assert store.sessions["s1"].tool_calls["c1"].meta is None


def test_strict_store_continues_after_the_line_that_raised() -> None:
    """In a strict store the lines after a rejected one are applied by the next call."""
    store = SessionStore(strict=True)
    with pytest.raises(SchemaError):
        store.feed(update(tool(title="A")) + update(tool(title=[])) + update(tool(status="failed")))
    assert store.sessions["s1"].tool_calls["c1"].status == "pending"
    store.close()
    call = store.sessions["s1"].tool_calls["c1"]
    assert (call.title, call.status) == ("A", "failed")
    with pytest.raises(UsageError):
        store.feed(b"")


def test_batches_blank_lines_and_a_last_line_without_newline() -> None:
    """A batch line applies each member in order; blank lines are skipped; close reads the tail."""
    batch = orjson.dumps(
        [
            orjson.loads(update(tool(title="A"))),
            orjson.loads(update(tool(status="completed"))),
        ]
    )
    store = SessionStore()
    store.feed(b"\n  \n" + batch + b"\n" + update(tool(kind="read"))[:-1])
    assert store.sessions["s1"].tool_calls["c1"].status == "completed"
    store.close()
    assert store.sessions["s1"].tool_calls["c1"].kind == "read"
    assert store.diagnostics == []


@pytest.mark.parametrize("strict", [False, True])
def test_big_integers_in_meta_stay_exact(strict: bool) -> None:
    """10**25 in a _meta value is stored and rendered exactly, not as the float 1e+25."""
    store = read(
        update(tool(title="T")) + update(tool(_meta={"n": 10**25, "m": -(2**64)})),
        strict=strict,
    )
    meta = store.sessions["s1"].tool_calls["c1"].meta
    assert meta == {"n": 10**25, "m": -(2**64)}
    assert isinstance(meta["n"], int)
    assert store.to_json()["sessions"]["s1"]["entities"]["tool_call:c1"]["_meta"] == meta


def test_too_deep_line_raises_naming_the_limit_and_the_store_goes_on() -> None:
    """A line past the shared depth limit is a DecodeError naming it; the next line applies."""
    from agentproto._core.json.codec import DEFAULT_MAX_DEPTH

    deep: Any = []
    for _ in range(DEFAULT_MAX_DEPTH):
        deep = [deep]
    store = SessionStore()
    with pytest.raises(DecodeError, match=f"deeper than {DEFAULT_MAX_DEPTH} levels") as caught:
        store.feed(update(tool(title="A")) + update(tool(_meta={"d": deep})))
    assert caught.value.line == 2
    store.feed(update(tool(title="B")))
    store.close()
    assert store.sessions["s1"].tool_calls["c1"].title == "B"
    assert store.sessions["s1"].tool_calls["c1"].meta is None


def test_a_bug_in_a_rule_is_not_taken_for_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the errors bad input raises send a line down the general path; a TypeError escapes."""
    from agentproto.acp._state import store as _store

    loader, _rule = _store._FAST_PATH["tool_call_update"]

    def broken(state: Any, value: Any) -> None:
        raise TypeError("a bug")

    monkeypatch.setitem(_store._FAST_PATH, "tool_call_update", (loader, broken))
    with pytest.raises(TypeError, match="a bug"):
        read(update(tool(title="A")))


# ---- child sessions: the announcement comes first (issue 25; the subagents RFD) -------------


def announce(child: str, **fields: Any) -> dict[str, Any]:
    return {"sessionUpdate": "subagent_update", "sessionId": child, **fields}


def message(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": text}}  # fmt: skip


def announcement(child: str, parent: str, *, general: bool) -> bytes:
    """The announcing line; ``general``: with a params member that takes the general path."""
    if not general:
        return update(announce(child, title="C"), parent)
    params = {"sessionId": parent, "update": announce(child, title="C"), "_meta": {"k": 1}}
    return line({"jsonrpc": "2.0", "method": "session/update", "params": params})


@pytest.mark.parametrize("general", [False, True], ids=["fast-path", "general-path"])
@pytest.mark.parametrize("strict", [False, True])
def test_child_traffic_before_its_announcement_is_reported(strict: bool, general: bool) -> None:
    """A child session whose traffic came before the subagent_update announcing it: the
    announcement is reported (line, path, the child's id); the traffic is kept as it came,
    strict or not, and the child is announced on its parent."""
    store = read(
        update(message("early"), "child") + announcement("child", "parent", general=general),
        strict=strict,
    )
    assert codes(store) == [(2, "unannounced-session", "/params/update/sessionId")]
    (diagnostic,) = store.diagnostics
    assert diagnostic.subject == "child" and "'parent'" in diagnostic.message
    assert store.sessions["child"].agent_messages["m1"].content[0].text == "early"  # type: ignore[union-attr]
    assert store.sessions["parent"].subagents["child"].title == "C"


def test_children_announced_first_are_not_reported() -> None:
    """In order (announcement, then the child's traffic, then updates of the child) and
    a replayed announcement of a child with traffic: nothing to report."""
    data = (
        update(announce("child", title="C"), "parent")
        + update(message("hi"), "child")
        + update(announce("child", title="D"), "parent")
        + update(announce("child", title="D"), "parent")
    )
    store = read(data)
    assert store.diagnostics == []
    assert store.sessions["parent"].subagents["child"].title == "D"


def test_a_skipped_announcement_announces_nothing() -> None:
    """An announcement that cannot be applied (here: its session is full) changes nothing:
    the next one is the first, and it is the one reported."""
    store = SessionStore(max_entities=1)
    store.feed(update(message("early"), "child") + update(message("p"), "full"))
    store.feed(update(announce("child"), "full") + update(announce("child"), "parent"))
    store.close()
    assert [code for _, code, _ in codes(store)] == ["invalid-update", "unannounced-session"]
    assert "'parent'" in store.diagnostics[1].message
