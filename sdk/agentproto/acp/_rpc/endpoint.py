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
  ``parse error`` / ``invalid request``, as JSON-RPC asks: with id ``null``, or
  with the message's own id when it can be read (a string or integer ``id`` in
  something not shaped as a response; see
  :class:`~agentproto.acp._protocol.jsonrpc.InvalidMessage`).

Batches (JSON-RPC 2.0 section 6, a MUST of ACP v2's transports). A line holding
an array is read member by member, each as if it came on a line of its own
(same events, same automatic errors), and the answers to its requests are
gathered into ONE line holding ONE array:

* an invalid member (``17``, an object that is not JSON-RPC) gets its own
  ``invalid request`` inside the array; its valid siblings are served as usual;
* a member answered at once (method not found, invalid params, duplicate id,
  invalid request) has its error put in the array at once; a request that
  becomes :class:`RequestReceived` is remembered as belonging to the batch, and
  its answer (:meth:`~Endpoint.respond`, :meth:`~Endpoint.respond_error`) goes
  to the array too. The array is queued when the batch's last request is
  answered, its members in the order the answers came;
* notifications and responses in a batch get no answer; a batch holding only
  those gets no reply at all, and the empty batch ``[]`` is answered with one
  (non-array) ``invalid request``, id ``null``;
* :meth:`~Endpoint.close` with a batch partly answered queues the answers it
  has, as an array; its requests still in flight are dropped, as every request
  in flight is (:meth:`~Endpoint.data_to_send` still hands over the array).

A peer's batch of responses is read the same way: each response settles its
request. This side sends a batch with :meth:`Endpoint.send_batch` (a sequence of
:class:`BatchCall`): one line, the requests' ids returned in order.

Outgoing, our request ids are integers counting from 0; the result class of
each pending request is recorded so its response can be typed. Problems are
split as h11 splits them: the peer's mistakes are events, diagnostics or a
:class:`~agentproto.ProtocolError`; the caller's raise
:class:`~agentproto.UsageError`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
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
    InvalidMessage,
    Message,
    MessageReader,
    Notification,
    Request,
    Response,
    encode_batch,
    encode_message,
    parse_message,
    read_message,
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
    "BatchCall",
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


@attrs.define(eq=False)
class _Batch:
    """The answers to one incoming batch, gathered until its last request is answered."""

    parts: list[bytes] = attrs.Factory(list)  # encoded responses, no newline
    waiting: int = 0  # its requests still in flight


@attrs.frozen
class BatchCall:
    """One member of a batch to send (:meth:`Endpoint.send_batch`,
    :meth:`~agentproto.acp.Connection.send_batch`): a request or a notification.

    Build it with :meth:`request` or :meth:`notify`; ``target`` and
    ``params`` are as for :meth:`Endpoint.send_request`: a typed params object
    (its class names the method), or a method name with its params.

    Attributes:
        target: a typed params object, or a method name.
        params: the params when ``target`` is a method name.
        notification: whether it is a notification (not answered) rather than
            a request.
    """

    target: Any
    params: Any = None
    notification: bool = attrs.field(default=False, kw_only=True)

    @classmethod
    def request(cls, target: Any, params: Any = None) -> BatchCall:
        """A request member: its response comes back like any other."""
        return cls(target, params)

    @classmethod
    def notify(cls, target: Any, params: Any = None) -> BatchCall:
        """A notification member: it gets no response."""
        return cls(target, params, notification=True)


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
        self._batch_of: dict[int | str, _Batch] = {}  # an in-flight id -> the batch it came in
        self._reading: _Batch | None = None  # the batch being read: automatic answers go there
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
        self._reader.push(data)
        return self._drain()

    def feed_eof(self) -> list[Event]:
        """The peer's byte stream ended: read a last unterminated line, then :meth:`close`
        (the peer closed the connection)."""
        self._reader.end()
        events = self._drain()
        return events + self.close(by_peer=True)

    def _drain(self) -> list[Event]:
        """The events of the lines waiting in the reader (a bad line: answered, and on)."""
        events: list[Event] = []
        while True:
            try:
                for value, line, offset in self._reader.documents():
                    if value.__class__ is list:
                        events += self._receive_batch(value, line, offset)
                        continue
                    try:
                        message = parse_message(value, line=line)
                    except SchemaError as err:
                        invalid = InvalidMessage.of(value, err, line=line)
                        events += self.receive_malformed(invalid.decode_error(offset), invalid.id)
                        continue
                    events += self.receive(message)
                return events
            except DecodeError as error:  # not JSON: the reader goes on after it
                events += self.receive_malformed(error)

    def receive_malformed(self, error: DecodeError, ident: int | str | None = None) -> list[Event]:
        """A line (or batch member) that is not JSON (``parse error``) or not JSON-RPC
        (``invalid request``), answered with id ``ident``: ``None`` unless its id could
        be read (:class:`~agentproto.acp._protocol.jsonrpc.InvalidMessage`)."""
        shape = isinstance(error.__cause__, SchemaError)
        code = RpcErrorCode.INVALID_REQUEST if shape else RpcErrorCode.PARSE_ERROR
        self._reply(Response(ident, error=RpcError(code, str(error)).to_error()))
        return [_diagnostic("rpc.malformed-line", str(error), line=error.line)]

    def _receive_batch(self, values: list[Any], line: int, offset: int) -> list[Event]:
        """A batch: each member as on a line of its own, the answers gathered in one array."""
        if not values:
            empty = SchemaError("minItems", "", "a batch must not be empty")
            return self.receive_malformed(
                InvalidMessage(None, empty, line=line).decode_error(offset)
            )
        batch = self._reading = _Batch()
        events: list[Event] = []
        try:
            for index, value in enumerate(values):
                member = read_message(value, line=line, location=f"/{index}")
                if isinstance(member, InvalidMessage):
                    events += self.receive_malformed(member.decode_error(offset), member.id)
                elif isinstance(member, Request) and member.id not in self._in_flight:
                    events += self.receive(member)
                    if member.id in self._in_flight:  # it awaits an answer: the batch's
                        self._batch_of[member.id] = batch
                        batch.waiting += 1
                else:  # a notification, a response, a duplicate id (answered at once)
                    events += self.receive(member)
        finally:
            self._reading = None
        if not batch.waiting:
            self._queue_batch(batch)
        return events

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

    def _reply(self, response: Response) -> None:
        """Queue an answer given while reading: to the batch being read, if any."""
        line = encode_message(response)
        if self._reading is None:
            self._outbox.append(line)
        else:
            self._reading.parts.append(line[:-1])

    def _queue_batch(self, batch: _Batch) -> None:
        """Queue a batch's answers as one array (nothing when it has none)."""
        if batch.parts:
            self._outbox.append(b"[" + b",".join(batch.parts) + b"]\n")

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
        self._outbox.append(encode_message(Request(ident, method, wire)))
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
        self._outbox.append(encode_message(Notification(method, wire)))

    def send_batch(self, calls: Sequence[BatchCall]) -> list[int | None]:
        """Queue several requests and notifications as one JSON-RPC batch (one line).

        Each member is checked as :meth:`send_request` and :meth:`notify` check
        theirs, all before anything is queued: a bad member queues nothing. The
        peer answers the requests with one array, whose responses come back as
        the usual :class:`ResponseReceived` / :class:`RequestFailed` events.

        Args:
            calls: the members, in order (at least one).

        Returns:
            For each member in order, its request id, or ``None`` for a notification.

        Raises:
            UsageError: no member, a member's method does not exist or the peer does
                not handle it, or the connection speaks ACP v1 (which has no batches).
            SchemaError: dict params that the schema rejects.
            ConnectionClosedError: the endpoint is closed.
        """
        self._check_open()
        if self.protocol < 2:
            raise UsageError("rpc.batch-v1", "ACP v1 has no batches")
        if not calls:
            raise UsageError("rpc.empty-batch", "a batch needs at least one member")
        ident = self._next_id
        messages: list[Request | Notification] = []
        ids: list[int | None] = []
        pending: dict[int, _Pending] = {}
        for call in calls:
            if not isinstance(call, BatchCall):
                raise UsageError(
                    "rpc.not-a-call", f"a batch member is a BatchCall, not {type(call).__name__}"
                )
            kind = "notification" if call.notification else "request"
            method, wire, spec = self._outgoing(call.target, call.params, kind)
            if call.notification:
                messages.append(Notification(method, wire))
                ids.append(None)
                continue
            messages.append(Request(ident, method, wire))
            ids.append(ident)
            pending[ident] = _Pending(method, None if spec is None else spec.result)
            ident += 1
        self._outbox.append(encode_batch(messages))
        self._next_id = ident
        self._pending.update(pending)
        return ids

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
        """Queue the answer (to its batch, if it came in one); the request leaves flight only
        once it encodes."""
        line = encode_message(response)
        batch = self._batch_of.pop(ident, None) if self._batch_of else None
        if batch is None:
            self._outbox.append(line)
        else:
            batch.parts.append(line[:-1])
            batch.waiting -= 1
            if not batch.waiting:
                self._queue_batch(batch)
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
        self._reply(Response(ident, error=RpcError(code, message, data).to_error()))

    def close(self, *, by_peer: bool = False) -> list[Event]:
        """Close the endpoint: every pending request fails with :class:`ConnectionClosedError`.

        The peer's requests in flight are dropped (they cannot be answered); a
        batch partly answered has the answers it has queued as its array, so
        that :meth:`data_to_send` can still hand them over. Calling it again
        returns ``[]``.

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
        for batch in dict.fromkeys(self._batch_of.values()):  # each once, in order
            self._queue_batch(batch)
        self._batch_of.clear()
        return events


def _params(value: Any) -> Any:
    """Absent params read as an empty object."""
    return {} if value is None else value
