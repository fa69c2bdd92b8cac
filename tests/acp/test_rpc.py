"""The sans-I/O endpoint: correlation, typed params, errors by who broke what."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    AuthRequiredError,
    ConnectionClosedError,
    ProtocolError,
    RpcError,
    SchemaError,
    UsageError,
)
from agentproto.acp._generated_v2 import (
    CancelSessionNotification,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    TextContentBlock,
)
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._rpc.endpoint import (
    BatchCall,
    CancelRequested,
    Endpoint,
    Event,
    NotificationReceived,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)


def lines(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines()]


def wire(*objs: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps({"jsonrpc": "2.0", **obj}) + b"\n" for obj in objs)


def pump(source: Endpoint, target: Endpoint) -> list[Event]:
    return target.feed(source.data_to_send())


def test_request_response_correlation() -> None:
    """A request gets an int id, and the response comes back typed with its method."""
    client, agent = Endpoint("client"), Endpoint("agent")
    first = client.send_request(NewSessionRequest(cwd="/tmp"))
    second = client.send_request("session/new", {"cwd": "/srv"})
    assert (first, second) == (0, 1)
    events = pump(client, agent)
    assert [type(e) for e in events] == [RequestReceived, RequestReceived]
    received = [e for e in events if isinstance(e, RequestReceived)]
    assert received[1].params == NewSessionRequest(cwd="/srv")
    # answer out of order
    agent.respond(received[1].id, NewSessionResponse(session_id="b"))
    agent.respond(received[0].id, {"sessionId": "a"})
    results = pump(agent, client)
    assert results == [
        ResponseReceived(id=1, method="session/new", result=NewSessionResponse(session_id="b")),
        ResponseReceived(id=0, method="session/new", result=NewSessionResponse(session_id="a")),
    ]
    assert client.pending == frozenset() and agent.in_flight == frozenset()


def test_string_ids_from_the_peer_are_answered_as_given() -> None:
    """A peer's string id and integer id 1 are different requests."""
    agent = Endpoint("agent")
    events = agent.feed(
        wire(
            {"id": "1", "method": "session/new", "params": {"cwd": "/a"}},
            {"id": 1, "method": "session/new", "params": {"cwd": "/b"}},
        )
    )
    assert [e.id for e in events if isinstance(e, RequestReceived)] == ["1", 1]
    agent.respond("1", NewSessionResponse(session_id="x"))
    assert lines(agent.data_to_send()) == [
        {"jsonrpc": "2.0", "id": "1", "result": {"sessionId": "x"}}
    ]


def test_feeding_byte_by_byte_gives_the_same_events() -> None:
    """Input split anywhere gives the same events as the whole input."""
    data = wire(
        {"id": 3, "method": "session/new", "params": {"cwd": "/a"}},
        {"method": "session/cancel", "params": {"sessionId": "s"}},
    )
    whole = Endpoint("agent").feed(data)
    agent = Endpoint("agent")
    split = [e for i in range(len(data)) for e in agent.feed(data[i : i + 1])]
    assert whole == split and len(whole) == 2


def test_invalid_params_are_answered_with_location_and_keyword() -> None:
    """Params the schema rejects get -32602 whose data names the keyword and location."""
    agent = Endpoint("agent")
    events = agent.feed(wire({"id": 7, "method": "session/prompt", "params": {"sessionId": 5}}))
    assert [type(e) for e in events] == [Diagnostic]
    (reply,) = lines(agent.data_to_send())
    assert reply["id"] == 7
    assert reply["error"]["code"] == RpcErrorCode.INVALID_PARAMS == -32602
    assert reply["error"]["data"]["keyword"] in {"type", "required"}
    assert reply["error"]["data"]["location"].startswith("/params")
    assert agent.in_flight == frozenset()


def test_invalid_params_location_points_at_the_field() -> None:
    """A wrongly typed field is reported at its own pointer."""
    agent = Endpoint("agent")
    agent.feed(wire({"id": 1, "method": "session/new", "params": {"cwd": 5}}))
    (reply,) = lines(agent.data_to_send())
    assert reply["error"]["data"] == {"keyword": "type", "location": "/params/cwd"}


def test_unknown_request_method_is_method_not_found() -> None:
    """An unknown request, or one the other side handles, gets -32601."""
    agent = Endpoint("agent")
    events = agent.feed(
        wire(
            {"id": 1, "method": "no/such", "params": {}},
            {"id": 2, "method": "session/request_permission", "params": {}},
        )
    )
    assert all(isinstance(e, Diagnostic) for e in events)
    replies = lines(agent.data_to_send())
    assert [r["error"]["code"] for r in replies] == [-32601, -32601]
    assert [r["id"] for r in replies] == [1, 2]


def test_unknown_notification_is_a_diagnostic() -> None:
    """An unknown notification is reported, never answered."""
    agent = Endpoint("agent")
    events = agent.feed(wire({"method": "no/such", "params": {}}))
    assert isinstance(events[0], Diagnostic)
    assert events[0].code == "rpc.unknown-notification"
    assert agent.data_to_send() == b""


def test_bad_notification_params_are_a_diagnostic() -> None:
    """A notification whose params the schema rejects is dropped with a diagnostic."""
    agent = Endpoint("agent")
    (event,) = agent.feed(wire({"method": "session/cancel", "params": {}}))
    assert isinstance(event, Diagnostic) and event.code == "rpc.invalid-notification"
    assert agent.data_to_send() == b""


def test_extension_methods_pass_through_untyped() -> None:
    """``_``-prefixed requests and notifications carry their raw params."""
    client, agent = Endpoint("client"), Endpoint("agent")
    ident = client.send_request("_acme/ping", {"n": [1, 2]})
    client.notify("_acme/tick", {"t": 1})
    request, note = pump(client, agent)
    assert isinstance(request, RequestReceived) and request.extension
    assert request.params == {"n": [1, 2]}
    assert isinstance(note, NotificationReceived) and note.extension
    agent.respond(request.id, {"pong": True})
    (response,) = pump(agent, client)
    assert response == ResponseReceived(id=ident, method="_acme/ping", result={"pong": True})


def test_notification_typed_both_ways() -> None:
    """A typed notification arrives typed on the side that handles it."""
    client, agent = Endpoint("client"), Endpoint("agent")
    client.notify(CancelSessionNotification(session_id="s"))
    (event,) = pump(client, agent)
    assert isinstance(event, NotificationReceived)
    assert event.params == CancelSessionNotification(session_id="s")


def test_response_to_unknown_id_is_a_diagnostic() -> None:
    """A response to an id never sent is reported, not raised."""
    client = Endpoint("client")
    client.send_request(NewSessionRequest(cwd="/"))
    events = client.feed(wire({"id": 9, "result": {}}, {"id": "0", "result": {}}))
    assert [e.code for e in events if isinstance(e, Diagnostic)] == [
        "rpc.unknown-response",
        "rpc.unknown-response",
    ]
    assert client.pending == frozenset({0})


def test_error_response_fails_the_request() -> None:
    """An error response becomes RequestFailed with an RpcError."""
    client = Endpoint("client")
    client.send_request(NewSessionRequest(cwd="/"))
    (event,) = client.feed(wire({"id": 0, "error": {"code": -32000, "message": "log in"}}))
    assert isinstance(event, RequestFailed) and isinstance(event.error, RpcError)
    assert event.error.code is RpcErrorCode.AUTHENTICATION_REQUIRED


def test_result_the_schema_rejects_is_a_peer_error() -> None:
    """A result that does not match the result class fails as the peer's fault."""
    client = Endpoint("client")
    client.send_request(NewSessionRequest(cwd="/"))
    (event,) = client.feed(wire({"id": 0, "result": {"sessionId": 3}}))
    assert isinstance(event, RequestFailed) and isinstance(event.error, ProtocolError)


def test_the_authentication_code_is_the_schemas() -> None:
    """AuthRequiredError's own code (written in agentproto._core.errors, which cannot import
    the generated enum) is the schema's AUTHENTICATION_REQUIRED."""
    assert AuthRequiredError().code == RpcErrorCode.AUTHENTICATION_REQUIRED
    assert AuthRequiredError().to_error()["code"] == RpcErrorCode.AUTHENTICATION_REQUIRED.value


def test_malformed_lines_are_answered_and_reported() -> None:
    """Bad JSON gets -32700, a non-JSON-RPC object -32600, both with id null."""
    agent = Endpoint("agent")
    events = agent.feed(b"{nope\n" + b'{"jsonrpc":"1.0"}\n' + wire({"method": "_ok"}))
    assert [type(e) for e in events] == [Diagnostic, Diagnostic, NotificationReceived]
    replies = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(None, -32700), (None, -32600)]


def test_a_malformed_line_is_reported_with_its_line_number() -> None:
    """The diagnostic of a malformed line carries its 1-based ``line``, not an event index."""
    agent = Endpoint("agent")
    events = agent.feed(wire({"method": "_ok"}) + b"{nope\n")
    diagnostic = events[-1]
    assert isinstance(diagnostic, Diagnostic) and diagnostic.code == "rpc.malformed-line"
    assert (diagnostic.line, diagnostic.index) == (2, None)


def test_peer_cancel_of_a_request_in_flight() -> None:
    """$/cancel_request for a request in flight is an event; then it is answered -32800."""
    client, agent = Endpoint("client"), Endpoint("agent")
    ident = client.send_request(PromptRequest(session_id="s", prompt=[TextContentBlock(text="hi")]))
    pump(client, agent)
    client.cancel(ident)
    (event,) = pump(client, agent)
    assert event == CancelRequested(id=ident, method="session/prompt")
    agent.respond_error(ident, RpcErrorCode.REQUEST_CANCELLED, "cancelled")
    (failed,) = pump(agent, client)
    assert isinstance(failed, RequestFailed) and isinstance(failed.error, RpcError)
    assert failed.error.code == -32800


def test_cancel_for_an_unknown_request_is_a_diagnostic() -> None:
    """A cancel that races the response (or names nothing) is only reported."""
    agent = Endpoint("agent")
    (event,) = agent.feed(wire({"method": "$/cancel_request", "params": {"requestId": 4}}))
    assert isinstance(event, Diagnostic) and event.code == "rpc.cancel-unknown-id"


def test_cancel_that_races_the_answer_is_ignored() -> None:
    """$/cancel_request for a request this side has just answered is ignored without a
    diagnostic (the schema: ignore it for an already-answered id, send no second answer)."""
    client, agent = Endpoint("client"), Endpoint("agent")
    ident = client.send_request(NewSessionRequest(cwd="/"))
    pump(client, agent)
    agent.respond(ident, NewSessionResponse(session_id="s"))
    agent.data_to_send()
    client.cancel(ident)
    assert pump(client, agent) == []
    assert agent.data_to_send() == b""


def test_forgotten_request_drops_its_late_response_silently() -> None:
    """After cancel(forget=True) the late response produces no event."""
    client = Endpoint("client")
    ident = client.send_request(NewSessionRequest(cwd="/"))
    client.data_to_send()
    client.cancel(ident, forget=True)
    (cancel,) = lines(client.data_to_send())
    assert cancel == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 0}}
    assert client.feed(wire({"id": 0, "result": {"sessionId": "x"}})) == []


def test_close_fails_pending_requests() -> None:
    """Closing fails every pending request with ConnectionClosedError; sending then raises."""
    client = Endpoint("client")
    client.send_request(NewSessionRequest(cwd="/"))
    (event,) = client.feed_eof()
    assert isinstance(event, RequestFailed) and isinstance(event.error, ConnectionClosedError)
    with pytest.raises(ConnectionClosedError):
        client.send_request(NewSessionRequest(cwd="/"))
    assert client.close() == []


def test_closing_says_who_closed() -> None:
    """The peer's end of stream fails requests with ``by_peer`` true, close() with it false;
    neither is a ProtocolError (closing breaks no rule)."""
    by_peer = Endpoint("client")
    by_peer.send_request(NewSessionRequest(cwd="/"))
    (event,) = by_peer.feed_eof()
    assert isinstance(event, RequestFailed) and isinstance(event.error, ConnectionClosedError)
    assert event.error.by_peer and "(closed by the peer)" in str(event.error)
    assert not isinstance(event.error, ProtocolError)
    assert isinstance(event.error, ConnectionError)
    with pytest.raises(ConnectionClosedError) as sending:
        by_peer.send_request(NewSessionRequest(cwd="/"))
    assert sending.value.by_peer
    here = Endpoint("client")
    here.send_request(NewSessionRequest(cwd="/"))
    (event,) = here.close()
    assert isinstance(event, RequestFailed) and isinstance(event.error, ConnectionClosedError)
    assert not event.error.by_peer and "(closed here)" in str(event.error)
    assert not isinstance(event.error, ProtocolError)
    with pytest.raises(ConnectionClosedError) as sending:
        here.send_request(NewSessionRequest(cwd="/"))
    assert not sending.value.by_peer


def test_overlong_line_is_a_peer_error() -> None:
    """A line longer than the limit fails as the peer's fault, bounding memory."""
    agent = Endpoint("agent", max_line_bytes=100)
    agent.feed(b"x" * 60)
    with pytest.raises(ProtocolError):
        agent.feed(b"x" * 60)
    completed = Endpoint("agent", max_line_bytes=100)
    completed.feed(b"x" * 60)
    with pytest.raises(ProtocolError):  # the chunk ends the line, which is too long
        completed.feed(b"x" * 60 + b"\n")


def test_caller_mistakes_are_usage_errors() -> None:
    """Sending what the peer does not handle, or answering twice, is the caller's fault."""
    client, agent = Endpoint("client"), Endpoint("agent")
    with pytest.raises(UsageError):
        agent.send_request(NewSessionRequest(cwd="/"))  # the agent handles session/new
    with pytest.raises(UsageError):
        client.send_request("no/such", {})
    with pytest.raises(UsageError):
        client.send_request(NewSessionResponse(session_id="x"))
    with pytest.raises(UsageError):
        client.send_request("session/new", PromptResponse(message_id="m"))
    with pytest.raises(SchemaError):
        client.send_request("session/new", {"cwd": 3})
    client.send_request(NewSessionRequest(cwd="/"))
    (request,) = pump(client, agent)
    assert isinstance(request, RequestReceived)
    with pytest.raises(UsageError):
        agent.respond(request.id, PromptResponse(message_id="m"))
    agent.respond(request.id, NewSessionResponse(session_id="s"))
    with pytest.raises(UsageError):
        agent.respond(request.id, NewSessionResponse(session_id="s"))


def test_duplicate_request_id_in_flight_is_rejected() -> None:
    """A second request with an id still in flight gets -32600; the first stays."""
    agent = Endpoint("agent")
    data = wire({"id": 1, "method": "session/new", "params": {"cwd": "/"}})
    agent.feed(data)
    (event,) = agent.feed(data)
    assert isinstance(event, Diagnostic) and event.code == "rpc.duplicate-id"
    assert lines(agent.data_to_send())[0]["error"]["code"] == -32600
    assert agent.in_flight == frozenset({1})


def test_unknown_fields_are_tolerated_with_diagnostics() -> None:
    """A field the schema repairs (x-deserialize-default-on-error) is reported, unless strict."""
    data = wire({"id": 1, "method": "session/new", "params": {"cwd": "/", "_meta": 5}})
    (event,) = Endpoint("agent").feed(data)
    assert isinstance(event, RequestReceived) and event.diagnostics
    strict = Endpoint("agent", strict=True)
    strict.feed(data)
    assert lines(strict.data_to_send())[0]["error"]["code"] == -32602


def test_v1_endpoint_uses_v1_methods() -> None:
    """A protocol 1 endpoint knows fs/read_text_file as a client method."""
    client = Endpoint("client", protocol=1)
    events = client.feed(
        wire(
            {
                "id": 1,
                "method": "fs/read_text_file",
                "params": {"sessionId": "s", "path": "/a"},
            }
        )
    )
    assert isinstance(events[0], RequestReceived)


def test_an_answer_that_does_not_encode_leaves_the_request_in_flight() -> None:
    """A result that is not JSON raises, and the request can still be answered."""
    agent = Endpoint("agent")
    agent.feed(wire({"id": 1, "method": "_x", "params": {}}))
    with pytest.raises(SchemaError):
        agent.respond(1, {"bad": object()})
    assert agent.in_flight == frozenset({1})
    agent.respond_error(1, RpcErrorCode.INTERNAL_ERROR, "oops")
    assert lines(agent.data_to_send())[0]["error"]["code"] == -32603


def test_error_response_without_id_is_a_diagnostic() -> None:
    """An error whose id the peer could not read is reported with its message."""
    (event,) = Endpoint("client").feed(
        wire({"id": None, "error": {"code": -32700, "message": "bad json"}})
    )
    assert isinstance(event, Diagnostic) and event.code == "rpc.error-without-id"
    assert "bad json" in event.message


# --- batches (JSON-RPC 2.0 section 6) ----------------------------------------------------------


def batch(*objs: Any) -> bytes:
    """One line holding a JSON array: objects get ``jsonrpc``, other values go as given."""
    members = [{"jsonrpc": "2.0", **obj} if isinstance(obj, dict) else obj for obj in objs]
    return orjson.dumps(members) + b"\n"


NEW = {"method": "session/new", "params": {"cwd": "/"}}


def test_a_batch_of_requests_is_answered_with_one_array() -> None:
    """Two requests in a batch: nothing is written until both are answered, then one line
    holding one array, its members in the order the answers came."""
    agent = Endpoint("agent")
    events = agent.feed(batch({"id": "a", **NEW}, {"id": 2, **NEW}))
    assert [(type(e), e.id) for e in events] == [(RequestReceived, "a"), (RequestReceived, 2)]  # type: ignore[union-attr]
    agent.respond(2, NewSessionResponse(session_id="two"))
    assert agent.data_to_send() == b""
    agent.respond("a", NewSessionResponse(session_id="one"))
    (line,) = agent.data_to_send().splitlines()
    assert orjson.loads(line) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "two"}},
        {"jsonrpc": "2.0", "id": "a", "result": {"sessionId": "one"}},
    ]
    assert agent.in_flight == frozenset()


def test_an_invalid_batch_member_gets_its_own_error_and_its_siblings_are_served() -> None:
    """``[request, 17]``: 17 gets -32600 (id null) in the array, the request is served."""
    agent = Endpoint("agent")
    events = agent.feed(batch({"id": 1, **NEW}, 17))
    assert [type(e) for e in events] == [RequestReceived, Diagnostic]
    assert isinstance(events[1], Diagnostic) and events[1].line == 1
    assert "/1" in events[1].message
    assert agent.data_to_send() == b""  # the request is still in flight
    agent.respond_error(1, RpcErrorCode.INTERNAL_ERROR, "no")
    (reply,) = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in reply] == [(None, -32600), (1, -32603)]


def test_a_batch_of_invalid_members_gets_one_error_each() -> None:
    """``[17, true, null]``: three -32600 errors, id null, in one array, at once."""
    agent = Endpoint("agent")
    agent.feed(batch(17, True, None))
    (reply,) = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in reply] == [(None, -32600)] * 3


def test_automatic_errors_of_batch_members_go_into_the_array() -> None:
    """Method not found, invalid params, a duplicate id: each answered inside the array."""
    agent = Endpoint("agent")
    agent.feed(
        batch(
            {"id": 1, "method": "no/such"},
            {"id": 2, "method": "session/new", "params": {"cwd": 5}},
            {"id": 3, **NEW},
            {"id": 3, **NEW},
        )
    )
    assert agent.data_to_send() == b""  # request 3 is in flight
    agent.respond(3, NewSessionResponse(session_id="s"))
    (reply,) = lines(agent.data_to_send())
    assert [(r["id"], r.get("error", {}).get("code")) for r in reply] == [
        (1, -32601),
        (2, -32602),
        (3, -32600),
        (3, None),
    ]


def test_a_batch_without_requests_gets_no_reply() -> None:
    """Notifications (and responses) in a batch are not answered: nothing is written."""
    agent = Endpoint("agent")
    events = agent.feed(
        batch({"method": "_note"}, {"method": "session/cancel", "params": {"sessionId": "s"}})
    )
    assert [type(e) for e in events] == [NotificationReceived, NotificationReceived]
    client = Endpoint("client")
    client.feed(batch({"method": "session/update", "params": {}}, {"id": 9, "result": None}))
    assert agent.data_to_send() == client.data_to_send() == b""


def test_notifications_in_a_batch_are_not_answered() -> None:
    """A request and a notification: the array holds the request's response only."""
    agent = Endpoint("agent")
    agent.feed(batch({"method": "_note"}, {"id": 1, "method": "_ext"}))
    agent.respond(1, {"ok": True})
    (reply,) = lines(agent.data_to_send())
    assert reply == [{"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}]


def test_the_empty_batch_gets_one_error_that_is_not_an_array() -> None:
    """``[]`` is answered with a single -32600 object, id null; reading goes on."""
    agent = Endpoint("agent")
    events = agent.feed(b"[]\n" + wire({"id": 1, "method": "_x"}))
    assert [type(e) for e in events] == [Diagnostic, RequestReceived]
    (reply,) = lines(agent.data_to_send())
    assert reply["id"] is None and reply["error"]["code"] == -32600


def test_an_invalid_message_whose_id_can_be_read_is_answered_with_it() -> None:
    """A readable string or integer id is echoed, alone on a line or in a batch; an
    unreadable one (a boolean) and that of something shaped as a response are not."""
    agent = Endpoint("agent")
    agent.feed(
        orjson.dumps({"jsonrpc": "1.0", "id": 5, "method": "session/new"})
        + b"\n"
        + orjson.dumps({"id": "s", "method": 7})
        + b"\n"
        + wire({"id": True, "method": "x"})
        + wire({"id": 4, "result": 1, "error": {"code": 1, "message": "m"}})
    )
    replies = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in replies] == [
        (5, -32600),
        ("s", -32600),
        (None, -32600),
        (None, -32600),
    ]
    agent.feed(batch({"id": 8, "method": 7}, {"id": 9}))
    (reply,) = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in reply] == [(8, -32600), (9, -32600)]


def test_a_single_request_is_not_held_back_by_an_open_batch() -> None:
    """A request on its own line, while a batch waits, is answered on its own line."""
    agent = Endpoint("agent")
    agent.feed(batch({"id": 1, **NEW}, {"id": 2, **NEW}) + wire({"id": 3, **NEW}))
    agent.respond(3, NewSessionResponse(session_id="c"))
    agent.respond(1, NewSessionResponse(session_id="a"))
    assert lines(agent.data_to_send()) == [
        {"jsonrpc": "2.0", "id": 3, "result": {"sessionId": "c"}}
    ]
    agent.respond(2, NewSessionResponse(session_id="b"))
    (reply,) = lines(agent.data_to_send())
    assert [r["id"] for r in reply] == [1, 2]


def test_a_cancelled_batch_member_is_answered_in_the_array() -> None:
    """``$/cancel_request`` for a batch member (in the same batch, too) is an event; its
    ``request cancelled`` answer joins the array."""
    agent = Endpoint("agent")
    events = agent.feed(
        batch({"id": 1, **NEW}, {"method": "$/cancel_request", "params": {"requestId": 1}})
    )
    assert events[1] == CancelRequested(id=1, method="session/new")
    agent.respond_error(1, RpcErrorCode.REQUEST_CANCELLED, "cancelled")
    (reply,) = lines(agent.data_to_send())
    assert [(r["id"], r["error"]["code"]) for r in reply] == [(1, -32800)]


def test_closing_with_a_batch_partly_answered_queues_the_answers_it_has() -> None:
    """close(): the answers a batch has are queued as its array; the rest are dropped."""
    agent = Endpoint("agent")
    agent.feed(batch({"id": 1, **NEW}, {"id": 2, **NEW}, 17))
    agent.respond(2, NewSessionResponse(session_id="b"))
    assert agent.data_to_send() == b""
    agent.close()
    (reply,) = lines(agent.data_to_send())
    assert [r["id"] for r in reply] == [None, 2]
    assert agent.in_flight == frozenset()
    assert agent.close() == [] and agent.data_to_send() == b""


def test_send_batch_writes_one_line_and_matches_the_response_array() -> None:
    """send_batch: one array line, ids in order (None for a notification); the peer's
    response array settles each pending request by id, typed."""
    client, agent = Endpoint("client"), Endpoint("agent")
    ids = client.send_batch(
        [
            BatchCall.request(NewSessionRequest(cwd="/a")),
            BatchCall.notify(CancelSessionNotification(session_id="s")),
            BatchCall.request("session/new", {"cwd": "/b"}),
        ]
    )
    assert ids == [0, None, 1] and client.pending == frozenset({0, 1})
    data = client.data_to_send()
    assert data.count(b"\n") == 1 and data.startswith(b"[")
    events = agent.feed(data)
    assert [type(e) for e in events] == [RequestReceived, NotificationReceived, RequestReceived]
    agent.respond(1, NewSessionResponse(session_id="b"))
    agent.respond(0, NewSessionResponse(session_id="a"))
    assert pump(agent, client) == [
        ResponseReceived(id=1, method="session/new", result=NewSessionResponse(session_id="b")),
        ResponseReceived(id=0, method="session/new", result=NewSessionResponse(session_id="a")),
    ]
    assert client.pending == frozenset()
    assert client.send_request(NewSessionRequest(cwd="/")) == 2  # ids go on counting


def test_send_batch_checks_every_member_before_queueing_any() -> None:
    """A bad member, no member, ACP v1, a closed endpoint: nothing is queued or pending."""
    client = Endpoint("client")
    good = BatchCall.request(NewSessionRequest(cwd="/"))
    with pytest.raises(UsageError):
        client.send_batch([good, BatchCall.request("no/such")])
    with pytest.raises(UsageError):
        client.send_batch([good, BatchCall.notify(NewSessionRequest(cwd="/"))])
    with pytest.raises(SchemaError):
        client.send_batch([good, BatchCall.request("session/new", {"cwd": 5})])
    with pytest.raises(UsageError):
        client.send_batch([good, NewSessionRequest(cwd="/")])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        client.send_batch([])
    with pytest.raises(UsageError):
        Endpoint("client", protocol=1).send_batch([good])
    assert client.data_to_send() == b"" and client.pending == frozenset()
    client.close()
    with pytest.raises(ConnectionClosedError):
        client.send_batch([good])
