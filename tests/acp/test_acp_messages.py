"""Typed ``session/update`` and ``session/request_permission`` messages over NDJSON JSON-RPC."""

from __future__ import annotations

import pytest

from agentproto import SchemaError
from agentproto.acp import (
    MessageReader,
    Notification,
    Request,
    SessionStore,
    encode_message,
    parse_permission_request,
    parse_session_notification,
    parse_session_update,
    permission_request,
    schema,
    session_notification,
)

PERMISSION_PARAMS = {
    "sessionId": "s1",
    "title": "Run `rm`?",
    "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}],
    "subject": {
        "type": "tool_call",
        "toolCall": {"toolCallId": "c1", "status": "pending", "_meta": {"a": None}},
    },
}


def test_permission_request_params_parse_to_the_generated_class() -> None:
    """session/request_permission params parse to RequestPermissionRequest, toolCall typed."""
    request = parse_permission_request(PERMISSION_PARAMS)
    assert isinstance(request, schema.RequestPermissionRequest)
    assert isinstance(request.subject, schema.ToolCallRequestPermissionSubject)
    assert isinstance(request.subject.tool_call, schema.ToolCallUpdate)
    assert request.subject.tool_call.meta == {"a": None}
    with pytest.raises(SchemaError) as caught:
        parse_permission_request({**PERMISSION_PARAMS, "options": []})
    assert caught.value.location == "/options"


def test_writing_a_typed_update_as_a_notification_line() -> None:
    """A typed update becomes a session/update notification and one compact NDJSON line."""
    update = parse_session_update(
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": None, "_meta": {"a": 1}}
    )
    message = session_notification("s1", update, meta={"trace": "t"})
    assert message == Notification(
        "session/update",
        {
            "sessionId": "s1",
            "update": {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "c1",
                "title": None,
                "_meta": {"a": 1},
            },
            "_meta": {"trace": "t"},
        },
    )
    data = encode_message(message)
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    (read,) = MessageReader().feed(data)
    note = parse_session_notification(read.params)
    assert (note.session_id, note.update, note.meta) == ("s1", update, {"trace": "t"})


def test_writing_a_permission_request_and_reading_it_back() -> None:
    """A typed permission request encodes as a JSON-RPC request a store applies."""
    request = parse_permission_request(PERMISSION_PARAMS)
    message = permission_request(7, request)
    assert isinstance(message, Request) and (message.id, message.method) == (
        7,
        "session/request_permission",
    )
    store = SessionStore(strict=True)
    store.feed(
        encode_message(
            session_notification(
                "s1",
                parse_session_update(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": "c1",
                        "_meta": {"a": 1, "b": 2},
                    }
                ),
            )
        )
        + encode_message(message)
    )
    store.close()
    call = store.sessions["s1"].tool_calls["c1"]
    assert (call.status, call.meta) == ("pending", {"b": 2})
    assert store.diagnostics == []


def test_reader_fast_path_matches_parse_message() -> None:
    """Lines read inline by the reader give exactly what parse_message gives, line numbers too."""
    lines = [
        b'{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}',
        b'{"jsonrpc":"2.0","method":"m"}',
        b'{"jsonrpc":"2.0","method":"m","params":null}',
        b'{"jsonrpc":"2.0","method":"m","params":[1]}',
        b'{"jsonrpc":"2.0","id":"x","method":"m"}',
        b'{"jsonrpc":"2.0","id":3,"result":null}',
    ]
    messages = MessageReader().feed(b"\n".join(lines) + b"\n")
    assert [m.line for m in messages] == [1, 2, 3, 4, 5, 6]
    assert messages[0] == Notification("session/update", {"a": 1})
    assert messages[2] == Notification("m", None)
    assert isinstance(messages[4], Request)
