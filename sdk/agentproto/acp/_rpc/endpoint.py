"""The sans-I/O JSON-RPC endpoint of an ACP connection.

Theory of operation
-------------------
An :class:`Endpoint` is one side (``"agent"`` or ``"client"``) of a connection.
It does no I/O, like h11: feed it what the peer sent and it returns events;
ask it to send and it queues messages, which :meth:`Endpoint.data_to_send`
hands over as bytes for the caller to write.

Incoming, each message becomes events (see :data:`Event`):

* a request for a method this side handles becomes :class:`RequestReceived`
  with typed params; it stays *in flight* until answered with
  :meth:`~Endpoint.respond` or :meth:`~Endpoint.respond_error`. Params the
  schema rejects are answered here with ``invalid params`` (``data`` holds the
  ``keyword`` and the ``location`` in the request); an unknown method, or one the
  other side handles, with ``method not found``. A ``_``-prefixed (extension)
  method passes through with its params untouched.
* a notification likewise becomes :class:`NotificationReceived`; when it cannot
  be typed it becomes a :class:`~agentproto.Diagnostic` instead. ``$/cancel_request``
  for a request in flight becomes :class:`CancelRequested` (answer it with
  ``request cancelled``, or with its result if it already has one).
* a response to one of our requests becomes :class:`ResponseReceived` (typed
  result) or :class:`RequestFailed`; a response to an id we never sent (or one
  we forgot) is a diagnostic, never an error.
* a line that is not JSON, or not JSON-RPC, is a diagnostic and is answered with
  ``parse error`` / ``invalid request`` (id ``null``), as JSON-RPC asks.

Outgoing, our request ids are integers counting from 0; the result class of
each pending request is recorded so its response can be typed. Problems are
split as h11 splits them: the peer's mistakes are events, diagnostics or a
:class:`~agentproto.ProtocolError`; the caller's raise
:class:`~agentproto.UsageError`.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Literal, TypeAlias

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import (
    ConnectionClosedError,
    DecodeError,
    ProtocolError,
    RpcError,
    SchemaError,
    UsageError,
)
from agentproto.acp._protocol.errors import RpcErrorCode, response_error
from agentproto.acp._protocol.jsonrpc import (
    Message,
    MessageReader,
    Notification,
    Request,
    Response,
    encode_message,
)
from agentproto.acp._protocol.methods import MethodSpec, classes_of
from agentproto.acp._protocol.wireversion import initialize_type, wire_version
from agentproto.acp._rpc.events import (
    CancelRequested,
    Event,
    NotificationReceived,
    RequestFailed,
    RequestReceived,
    ResponseReceived,
)

__all__ = [
    "CancelRequested",
    "Endpoint",
    "Event",
    "NotificationReceived",
    "RequestFailed",
    "RequestReceived",
    "ResponseReceived",
    "Side",
]

Side = Literal["agent", "client"]
_OTHER: dict[str, Side] = {"agent": "client", "client": "agent"}
_CANCEL_METHOD = "$/cancel_request"
_FORGOTTEN_CAP = 4096


_Loaded: TypeAlias = tuple[Any, tuple[Diagnostic, ...]]


@attrs.frozen
class _Pending:
    method: str
    result: Any  # the result type; None: keep plain JSON


def _diagnostic(code: str, message: str, **where: Any) -> Diagnostic:
    return Diagnostic(code=code, message=message, **where)


class Endpoint:
    """One side of an ACP JSON-RPC connection, without I/O.

    Args:
        side: ``"agent"`` or ``"client"``: the side this endpoint plays.
        protocol: the ACP major version (2, or 1 for the v1 classes).
        strict: read incoming params and results strictly (an unknown field is
            then an error, not a diagnostic).
        max_line_bytes: the longest line :meth:`feed` accepts.
    """

    def __init__(
        self,
        side: Side,
        *,
        protocol: int = 2,
        strict: bool = False,
        max_line_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        if side not in _OTHER:
            raise UsageError("rpc.side", f"side must be 'agent' or 'client', not {side!r}")
        self.side: Side = side
        self.peer_side: Side = _OTHER[side]
        self.switch_protocol(protocol)
        self._strict = strict
        self._max_line = max_line_bytes
        self._line_bytes = 0
        self._reader = MessageReader()
        self._next_id = 0
        self._pending: dict[int, _Pending] = {}
        self._forgotten: OrderedDict[int, None] = OrderedDict()
        self._in_flight: dict[int | str, MethodSpec | str] = {}
        self._answered: OrderedDict[int | str, None] = OrderedDict()  # the latest, capped
        self._outbox: list[bytes] = []
        self._closed = False
        self._closed_by_peer = False

    # ---- state -------------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def pending(self) -> frozenset[int]:
        """The ids of our requests still waiting for a response."""
        return frozenset(self._pending)

    @property
    def in_flight(self) -> frozenset[int | str]:
        """The ids of the peer's requests not answered yet."""
        return frozenset(self._in_flight)

    def method_of(self, ident: int) -> str:
        """The method of our pending request ``ident``.

        Raises:
            UsageError: ``ident`` is not pending.
        """
        pending = self._pending.get(ident)
        if pending is None:
            raise UsageError("rpc.not-pending", f"no pending request {ident!r}")
        return pending.method

    def data_to_send(self) -> bytes:
        """Take the bytes queued for the peer (NDJSON lines), ``b""`` when none."""
        data = b"".join(self._outbox)
        self._outbox.clear()
        return data

    def switch_protocol(self, protocol: int) -> None:
        """Speak ``protocol`` from now on (its table and classes): ``initialize`` negotiated it."""
        self.protocol = protocol
        self.table, self._converter = wire_version(protocol)

    # ---- incoming ----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Event]:
        """Take bytes from the peer; return the events of the lines they complete.

        Raises:
            ProtocolError: a line is longer than ``max_line_bytes``.
        """
        first = data.find(b"\n")
        if first < 0:
            self._line_bytes += len(data)
            longest = self._line_bytes
        else:  # the line this chunk completes, and the one it starts
            longest = self._line_bytes + first
            self._line_bytes = len(data) - data.rfind(b"\n") - 1
        if max(longest, self._line_bytes) > self._max_line:
            raise ProtocolError(
                "rpc.line-too-long", f"a line is longer than {self._max_line} bytes"
            )
        return self._drain(self._reader.feed, data)

    def feed_eof(self) -> list[Event]:
        """The peer's byte stream ended: read a last unterminated line, then :meth:`close`
        (the peer closed the connection)."""
        events = self._drain(lambda _: self._reader.close(), b"")
        return events + self.close(by_peer=True)

    def _drain(self, step: Any, data: bytes) -> list[Event]:
        events: list[Event] = []
        while True:
            try:
                messages: list[Message] = step(data)
            except DecodeError as error:
                events += self.receive_malformed(error)
                data = b""
                continue
            for message in messages:
                events += self.receive(message)
            if not self._reader.pending:
                return events
            data = b""

    def receive_malformed(self, error: DecodeError) -> list[Event]:
        """A line that is not JSON (``parse error``) or not JSON-RPC (``invalid request``)."""
        shape = isinstance(error.__cause__, SchemaError)
        code = RpcErrorCode.INVALID_REQUEST if shape else RpcErrorCode.PARSE_ERROR
        self._queue(Response(None, error=RpcError(code, str(error)).to_error()))
        return [_diagnostic("rpc.malformed-line", str(error), line=error.line)]

    def receive(self, message: Message) -> list[Event]:
        """Take one decoded message from the peer; return its events.

        Raises:
            UsageError: the endpoint is closed.
        """
        if self._closed:
            raise UsageError("rpc.closed", "receive() after close()")
        if isinstance(message, Request):
            return self._receive_request(message)
        if isinstance(message, Notification):
            return self._receive_notification(message)
        return self._receive_response(message)

    def _load(self, value: Any, tp: Any, method: str = "", result: bool = False) -> _Loaded:
        if tp is None:
            return value, ()
        tp, converter = initialize_type(self.protocol, method, value, result, (tp, self._converter))
        diagnostics: list[Diagnostic] | None = None if self._strict else []
        loaded = converter.load(value, tp, diagnostics=diagnostics)
        return loaded, tuple(diagnostics or ())

    def _receive_request(self, message: Request) -> list[Event]:
        ident, method = message.id, message.method
        if ident in self._in_flight:
            self._reply_error(ident, RpcErrorCode.INVALID_REQUEST, "duplicate request id")
            return [_diagnostic("rpc.duplicate-id", f"{method}: id {ident!r} is in flight")]
        if method.startswith("_"):
            self._in_flight[ident] = method
            return [RequestReceived(id=ident, method=method, params=message.params, spec=None)]
        spec = self.table.requests.get(method)
        if spec is None or spec.side != self.side:
            self._reply_error(ident, RpcErrorCode.METHOD_NOT_FOUND, f"method not found: {method}")
            return [_diagnostic("rpc.method-not-found", f"request {method!r}", subject=method)]
        try:
            params, diagnostics = self._load(_params(message.params), spec.params, method)
        except SchemaError as err:
            data = {"keyword": err.keyword, "location": "/params" + err.location}
            self._reply_error(ident, RpcErrorCode.INVALID_PARAMS, err.detail, data)
            return [_diagnostic("rpc.invalid-params", str(err), path=data["location"])]
        self._in_flight[ident] = spec
        return [
            RequestReceived(
                id=ident, method=method, params=params, spec=spec, diagnostics=diagnostics
            )
        ]

    def _receive_notification(self, message: Notification) -> list[Event]:
        method = message.method
        if method.startswith("_"):
            return [NotificationReceived(method=method, params=message.params, spec=None)]
        spec = self.table.notifications.get(method)
        if spec is None or spec.side not in (self.side, "protocol"):
            return [_diagnostic("rpc.unknown-notification", repr(method), subject=method)]
        try:
            params, diagnostics = self._load(_params(message.params), spec.params)
        except SchemaError as err:
            location = "/params" + err.location
            return [_diagnostic("rpc.invalid-notification", str(err), path=location)]
        if method == _CANCEL_METHOD:
            return [*diagnostics, *self._cancel_requested(params.request_id)]
        return [
            NotificationReceived(method=method, params=params, spec=spec, diagnostics=diagnostics)
        ]

    def _cancel_requested(self, ident: int | str) -> list[Event]:
        entry = self._in_flight.get(ident)
        if entry is None and ident in self._answered:
            return []  # it raced our answer: ignored, as the schema asks
        if entry is None:  # never received (or answered long ago)
            return [_diagnostic("rpc.cancel-unknown-id", f"no request {ident!r} in flight")]
        method = entry if isinstance(entry, str) else entry.method
        return [CancelRequested(id=ident, method=method)]

    def _receive_response(self, message: Response) -> list[Event]:
        ident = message.id
        if ident is None:  # the peer could not read the id of something we sent
            detail = (message.error or {}).get("message", "")
            return [_diagnostic("rpc.error-without-id", f"the peer reports: {detail}")]
        if not isinstance(ident, int) or (pending := self._pending.pop(ident, None)) is None:
            if isinstance(ident, int) and ident in self._forgotten:
                del self._forgotten[ident]  # a late answer to a request we gave up on
                return []
            what = "an error" if message.error is not None else "a result"
            return [_diagnostic("rpc.unknown-response", f"{what} for unknown id {ident!r}")]
        method = pending.method
        if message.error is not None:
            error = response_error(message.error, method=method)
            return [RequestFailed(id=ident, method=method, error=error)]
        try:
            result, diagnostics = self._load(message.result, pending.result, method, True)
        except SchemaError as err:
            bad = ProtocolError("rpc.invalid-result", f"{method}: {err}", subject=method)
            bad.__cause__ = err
            return [RequestFailed(id=ident, method=method, error=bad)]
        return [*diagnostics, ResponseReceived(id=ident, method=method, result=result)]

    # ---- outgoing ----------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ConnectionClosedError(
                "rpc.closed", "the connection is closed", by_peer=self._closed_by_peer
            )

    def _queue(self, message: Message) -> None:
        self._outbox.append(encode_message(message))

    def _outgoing(self, target: Any, params: Any, kind: str) -> tuple[str, Any, MethodSpec | None]:
        """Resolve what to send: (method, wire params, spec or None for an extension)."""
        if isinstance(target, str):
            method = target
            table = self.table.requests if kind == "request" else self.table.notifications
            spec = None if method.startswith("_") else table.get(method)
            if spec is None and not method.startswith("_"):
                raise UsageError("rpc.unknown-method", f"no {kind} method {method!r}")
        else:
            spec = self.table.for_params(type(target))
            if spec is None or spec.kind != kind:
                name = type(target).__name__
                raise UsageError("rpc.not-params", f"{name} is not the params of a {kind}")
            method, params = spec.method, target
        if spec is not None and spec.side not in (self.peer_side, "protocol"):
            raise UsageError(
                "rpc.wrong-side", f"{method!r} is handled by the {spec.side}, not the peer"
            )
        if spec is not None and spec.params is not None:
            params = self._typed(spec.method, spec.params, params)
        elif attrs.has(type(params)):
            params = self._converter.dump(params)
        return method, params, spec

    def _typed(self, method: str, tp: Any, value: Any, *, check: bool = False) -> Any:
        """The wire JSON of ``value`` for type ``tp``: a dict is checked, a typed object dumped.

        With ``check``, a typed object's JSON is checked too (read back strictly as
        ``tp``): an object the schema rejects (a required field left out, a
        definition class where the union member with its ``type`` belongs) raises
        :class:`~agentproto.SchemaError` instead of going out malformed.
        """
        if tp is Any:
            return value
        if isinstance(value, dict):
            return self._converter.dump(self._converter.load(value, tp))
        allowed = classes_of(tp)
        if allowed is not None and not isinstance(value, allowed):
            names = " | ".join(cls.__name__ for cls in allowed)
            raise UsageError(
                "rpc.wrong-type", f"{method}: expected {names}, not {type(value).__name__}"
            )
        if not attrs.has(type(value)):
            raise UsageError(
                "rpc.wrong-type", f"{method}: expected a typed object, not {type(value).__name__}"
            )
        wire = self._converter.dump(value)
        if check:
            self._converter.load(wire, tp)  # strictly: raises SchemaError
        return wire

    def send_request(self, target: Any, params: Any = None) -> int:
        """Queue a request to the peer.

        Args:
            target: a typed params object (its class names the method), or a
                method name with ``params`` (typed, or a dict that is checked).
                An extension (``_``-prefixed) method sends ``params`` as given.
            params: the params when ``target`` is a method name.

        Returns:
            The request id, which its :class:`ResponseReceived` or
            :class:`RequestFailed` will carry.

        Raises:
            UsageError: no such request, or the peer does not handle it.
            SchemaError: dict params that the schema rejects.
            ConnectionClosedError: the endpoint is closed.
        """
        self._check_open()
        method, wire, spec = self._outgoing(target, params, "request")
        ident = self._next_id
        self._queue(Request(ident, method, wire))
        self._next_id += 1
        self._pending[ident] = _Pending(method, None if spec is None else spec.result)
        return ident

    def notify(self, target: Any, params: Any = None) -> None:
        """Queue a notification to the peer (arguments as for :meth:`send_request`).

        Raises:
            UsageError: no such notification, or the peer does not handle it.
            ConnectionClosedError: the endpoint is closed.
        """
        self._check_open()
        method, wire, _ = self._outgoing(target, params, "notification")
        self._queue(Notification(method, wire))

    def cancel(self, ident: int, *, forget: bool = False) -> None:
        """Ask the peer to cancel our pending request ``ident`` (``$/cancel_request``).

        Its response still arrives as usual (often ``request cancelled``) unless
        ``forget`` is set: then the request stops being pending at once and a
        late response is dropped without a diagnostic. Nothing is sent when the
        request is no longer pending.
        """
        if ident not in self._pending or self._closed:
            return
        self.notify(_CANCEL_METHOD, {"requestId": ident})
        if forget:
            del self._pending[ident]
            self._forgotten[ident] = None
            while len(self._forgotten) > _FORGOTTEN_CAP:
                self._forgotten.popitem(last=False)

    def _check_in_flight(self, ident: int | str) -> MethodSpec | str:
        self._check_open()
        if ident not in self._in_flight:
            raise UsageError("rpc.not-in-flight", f"no request {ident!r} waits for an answer")
        entry = self._in_flight[ident]
        if isinstance(entry, str):
            return entry
        return self.table.requests.get(entry.method, entry)  # as the version spoken now has it

    def _answer(self, ident: int | str, response: Response) -> None:
        """Queue the answer; the request leaves flight only once it encodes."""
        self._outbox.append(encode_message(response))
        del self._in_flight[ident]
        self._answered[ident] = None
        if len(self._answered) > _FORGOTTEN_CAP:
            self._answered.popitem(last=False)

    def respond(self, ident: int | str, result: Any) -> None:
        """Answer the peer's request ``ident`` with a result.

        Args:
            ident: the id from :class:`RequestReceived`.
            result: a typed result (an instance of the method's result class), a
                dict that the schema accepts, or any JSON for an untyped method.
                A typed result is checked against the schema before it is queued.

        Raises:
            UsageError: ``ident`` is not in flight, or ``result`` has the wrong type.
            SchemaError: a result that the schema rejects (a dict, or a typed object
                whose JSON breaks it), or a result that is not JSON; the request
                stays in flight, to be answered again.
            ConnectionClosedError: the endpoint is closed.
        """
        entry = self._check_in_flight(ident)
        if isinstance(entry, MethodSpec) and entry.result is not None:
            result = self._typed(entry.method, entry.result, result, check=True)
        elif attrs.has(type(result)):
            result = self._converter.dump(result)
        self._answer(ident, Response(ident, result))

    def respond_error(
        self, ident: int | str, code: int | RpcError, message: str = "", data: Any = None
    ) -> None:
        """Answer the peer's request ``ident`` with an error.

        Args:
            ident: the id from :class:`RequestReceived`.
            code: the error code, or an :class:`RpcError` (then ``message`` and
                ``data`` are ignored).
            message: the error message.
            data: the error's ``data``.

        Raises:
            UsageError: ``ident`` is not in flight.
            SchemaError: ``data`` is not JSON (the request stays in flight).
            ConnectionClosedError: the endpoint is closed.
        """
        self._check_in_flight(ident)
        error = code if isinstance(code, RpcError) else RpcError(code, message, data)
        self._answer(ident, Response(ident, error=error.to_error()))

    def _reply_error(self, ident: int | str, code: int, message: str, data: Any = None) -> None:
        self._queue(Response(ident, error=RpcError(code, message, data).to_error()))

    def close(self, *, by_peer: bool = False) -> list[Event]:
        """Close the endpoint: every pending request fails with :class:`ConnectionClosedError`.

        The peer's requests in flight are dropped (they cannot be answered).
        Calling it again returns ``[]``.

        Args:
            by_peer: whether the peer ended the connection (its stream ended or
                failed, or it broke the protocol) rather than this side closing it;
                the errors say so (:attr:`ConnectionClosedError.by_peer`).
        """
        if self._closed:
            return []
        self._closed = True
        self._closed_by_peer = by_peer
        events: list[Event] = [
            RequestFailed(
                id=ident,
                method=pending.method,
                error=ConnectionClosedError(
                    "rpc.closed",
                    f"{pending.method}: the connection closed before a response",
                    by_peer=by_peer,
                ),
            )
            for ident, pending in self._pending.items()
        ]
        self._pending.clear()
        self._in_flight.clear()
        return events


def _params(value: Any) -> Any:
    """Absent params read as an empty object."""
    return {} if value is None else value
