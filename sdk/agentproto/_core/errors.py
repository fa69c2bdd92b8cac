"""The one exception hierarchy of agentproto: every exception class a caller can meet.

Every fatal problem the SDK reports is an instance of :class:`AgentProtoError`,
and every such class is defined here, both protocols' included (the protocol
packages re-export theirs). The whole tree, each class with its builtin bases in
parentheses, ``[agui]`` / ``[acp]`` for a class exported by
:mod:`agentproto.agui` / :mod:`agentproto.acp` (``[unexported]``: by none; the others
by :mod:`agentproto`), and one line on when it is raised::

    AgentProtoError (Exception): the root; agentproto raises nothing else on purpose
    ├── SchemaError (ValueError): a document does not match the published schema
    │   └── StateShapeError [agui]: the state does not fit the type a StateView reads
    ├── DecodeError (ValueError): bytes could not be framed or decoded
    ├── ProtocolError: the peer broke a behavioural rule of the protocol
    │   ├── UnsupportedVersionError [acp]: initialize found no version both sides speak
    │   └── PeerProtocolError = ProtocolError [acp]: deprecated alias, for one release
    ├── UsageError: the caller asked for something the protocol does not allow
    ├── PatchError (ValueError): a well-formed JSON Patch could not be applied
    ├── LimitError (ValueError): input would take a container past a configured limit
    ├── InternalError: a bug in agentproto (or in a caller's hook) surfaced on input
    ├── MissingDependencyError (ImportError): a feature's optional dependency is missing
    ├── ConnectionClosedError (ConnectionError) [acp]: closed by the peer or here (by_peer)
    ├── RequestTimeoutError (TimeoutError) [acp]: a request got no response in time
    ├── RpcError [acp]: a JSON-RPC error response, received or to send
    │   └── AuthRequiredError [acp]: -32000, the agent wants a login first
    ├── MethodTableError (RuntimeError) [unexported]: a regeneration broke a METHODS table
    ├── StoreError: an event log or thread store failed (its backend's error is the cause)
    ├── CursorError (ValueError): a stream position that is malformed, foreign or ahead
    │   ├── CursorExpiredError: the log no longer holds that position (rebuild from snapshots)
    │   └── UnknownStreamError (LookupError): the log holds no stream of that name
    └── HttpError [agui]: the HTTP exchange with an agent failed
        ├── HttpStatusError [agui]: the agent answered with a status other than 2xx
        └── HttpTimeoutError (TimeoutError) [agui]: no connection, answer or bytes in time

The branches separate who broke what, as h11 does:

* :class:`SchemaError`: a document does not match the published schema. It names
  the JSON Schema ``keyword`` that failed and the ``location`` (a JSON Pointer
  into the instance, ``""`` for the top level) exactly as a JSON Schema
  validator would report it.
* :class:`DecodeError`: bytes could not be framed or decoded (SSE, JSON Lines,
  JSON, UTF-8, base64, size and depth limits).
* :class:`ProtocolError`: the peer broke a behavioural rule of the protocol
  (ordering, lifecycle, attribution, a result the schema rejects).
* :class:`UsageError`: the caller broke a rule (for example a producer emitting
  an event the protocol does not allow at that point).
* :class:`PatchError`: a well-formed JSON Patch could not be applied.
* :class:`LimitError`: input would take a container past a configured limit
  (entities of an ACP session, sessions of a store); it names the parameter.
* :class:`InternalError`: a bug in agentproto (or in a caller's hook) surfaced
  while processing input; the original exception is its ``__cause__``.
* :class:`MissingDependencyError` (also an ``ImportError``): a feature whose
  optional dependency is not installed was used; it names what to install.
* The transports' own failures are none of those: a closed connection
  (:class:`ConnectionClosedError`, which says whether the peer or this side
  closed it), a timeout, an error answer (:class:`RpcError`), a failed HTTP
  exchange (:class:`HttpError`).

``PeerProtocolError`` is a deprecated alias of :class:`ProtocolError` (it was a
subclass that added nothing), kept for one release.

Internal signals: a few modules steer their own control flow with exceptions
that do not derive from :class:`AgentProtoError` (the JSON parser's failure
signal, the loaders' slow-path and enough-problems signals, the wire checks'
unrecognised-member signal, the ASGI request's refusal). They are caught inside
the SDK and never reach a caller (one that did would be a bug), so they are not
part of this tree.

Locations are JSON Pointers into untrusted input; one longer than
:data:`~agentproto._core.describe.MAX_POINTER_CHARS` keeps only its two ends.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final, TypeVar

from agentproto._core.describe import cut_pointer

__all__ = [
    "AgentProtoError",
    "AuthRequiredError",
    "ConnectionClosedError",
    "CursorError",
    "CursorExpiredError",
    "DecodeError",
    "HttpError",
    "HttpStatusError",
    "HttpTimeoutError",
    "InternalError",
    "LimitError",
    "MethodTableError",
    "MissingDependencyError",
    "PatchError",
    "PeerProtocolError",
    "ProtocolError",
    "RequestTimeoutError",
    "RpcError",
    "SchemaError",
    "StateShapeError",
    "StoreError",
    "UnknownStreamError",
    "UnsupportedVersionError",
    "UsageError",
]
"""Every exception class of the tree (and its alias); the helpers :func:`as_sdk_error` and
:func:`chained` serve the SDK's own modules."""

_AUTHENTICATION_REQUIRED: Final = -32000
"""The ACP schema's ``AUTHENTICATION_REQUIRED`` error code (``agentproto.acp.RpcErrorCode``
names it; a test holds the two equal, so a regeneration that changes it fails)."""

_E = TypeVar("_E", bound=BaseException)


class AgentProtoError(Exception):
    """Root of every exception agentproto raises on purpose."""


class SchemaError(AgentProtoError, ValueError):
    """A document does not match the schema.

    ``keyword``, ``location`` and ``detail`` describe the first problem found; where
    the SDK parses or checks a whole document for a caller (``parse_event``,
    ``WireConverter.load``, the encoders' check, ...) it then looks on, and
    :attr:`problems` lists every problem of the document.

    Attributes:
        keyword: the JSON Schema keyword that rejected the document
            (``"type"``, ``"required"``, ``"oneOf"``, ``"const"``, ...).
        location: JSON Pointer of the rejected instance (``""`` is the root).
        detail: a human-readable explanation.
    """

    def __init__(
        self,
        keyword: str,
        location: str,
        detail: str,
        *,
        more: Sequence[SchemaError] = (),
    ) -> None:
        self.keyword = keyword
        self.location = location = cut_pointer(location)
        self.detail = detail
        self._more = tuple(more)
        message = f"{location or '<root>'}: {detail} [{keyword}]"
        if self._more:
            message += f" (and {len(self._more)} more problem(s), listed in .problems)"
        super().__init__(message)

    @property
    def problems(self) -> tuple[SchemaError, ...]:
        """Every problem found, this error's own first; each has ``keyword``,
        ``location`` and ``detail`` (``(self,)`` when only one was looked for)."""
        return (self, *self._more)

    def with_problems(self, problems: Sequence[SchemaError]) -> SchemaError:
        """The same error listing ``problems`` too (after its own; one at this error's
        keyword and location is left out as a repeat of it)."""
        mine = (self.keyword, self.location)
        more = [*self._more, *(p for p in problems if (p.keyword, p.location) != mine)]
        return SchemaError(self.keyword, self.location, self.detail, more=more)

    def at(self, prefix: str) -> SchemaError:
        """The same error with its location (and every problem's) moved under ``prefix``."""
        more = [problem.at(prefix) for problem in self._more]
        return SchemaError(self.keyword, prefix + self.location, self.detail, more=more)


class StateShapeError(SchemaError):
    """The AG-UI state does not fit the type a :class:`~agentproto.agui.StateView` reads it as.

    ``location`` is the JSON Pointer into the state where the first problem is,
    ``keyword`` ``"type"`` (a value of the wrong kind, or one the type's hook
    refused) or ``"required"`` (a member the type needs is missing); ``problems``
    lists every one. The exception cattrs (or the hook) raised is the cause.
    """


class DecodeError(AgentProtoError, ValueError):
    """Bytes that could not be framed or decoded.

    Attributes:
        offset: byte offset into the input where the problem was found, when known.
        line: 1-based line number, for line-oriented inputs, when known.
    """

    def __init__(self, message: str, *, offset: int | None = None, line: int | None = None) -> None:
        self.offset = offset
        self.line = line
        where = []
        if line is not None:
            where.append(f"line {line}")
        if offset is not None:
            where.append(f"byte {offset}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)


class ProtocolError(AgentProtoError):
    """The peer broke a behavioural rule of the protocol.

    Attributes:
        code: a stable machine-readable code (for example ``"run.not-started"``).
        subject: what the rule is about (an id, an event type), when there is one.
    """

    def __init__(self, code: str, message: str, *, subject: str | None = None) -> None:
        self.code = code
        self.subject = subject
        super().__init__(message)


PeerProtocolError = ProtocolError
"""Deprecated alias of :class:`ProtocolError`, kept for one release (it was a subclass
that added nothing): raise and catch :class:`ProtocolError`."""


class UnsupportedVersionError(ProtocolError):
    """The two sides of an ACP connection share no protocol version (the client closes it).

    Raised by the client's ``initialize`` when the agent refused with ``-32022`` or
    answered a version the client does not support.

    Attributes:
        requested: the version the client asked for.
        offered: the version the agent answered, or ``None`` when it refused
            with ``-32022``.
        supported: the versions the side that gave up supports.
    """

    def __init__(
        self, message: str, *, requested: int, offered: int | None, supported: tuple[int, ...]
    ) -> None:
        super().__init__("initialize.unsupported-version", message)
        self.requested = requested
        self.offered = offered
        self.supported = supported


class UsageError(AgentProtoError):
    """The caller asked for something the protocol does not allow.

    Attributes:
        code: a stable machine-readable code.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class PatchError(AgentProtoError, ValueError):
    """A JSON Patch operation could not be applied; the document is unchanged.

    Attributes:
        index: index of the failing operation in the patch.
        path: the operation's ``path`` (or ``from``) that failed.
        limit: the name of the :class:`~agentproto.PatchLimits` field the patch
            exceeded, ``None`` when no limit was the cause.
    """

    def __init__(self, message: str, *, index: int, path: str, limit: str | None = None) -> None:
        self.index = index
        self.path = path
        self.limit = limit
        super().__init__(f"operation {index} ({cut_pointer(path)!r}): {message}")


class LimitError(AgentProtoError, ValueError):
    """Input would take a container past a configured limit; nothing was changed.

    Attributes:
        limit: the name of the parameter that sets the limit (raise it there).
        value: the limit's value.
    """

    def __init__(self, message: str, *, limit: str, value: int) -> None:
        self.limit = limit
        self.value = value
        super().__init__(f"{message} (limit {limit}={value}; raise it to accept more)")


class InternalError(AgentProtoError):
    """An unexpected exception while processing input: a bug, not the peer's fault.

    The stream that raised it is failed like for any fatal error; the original
    exception is chained as ``__cause__`` (and kept as :attr:`original`) so the
    bug stays visible.

    Attributes:
        original: the exception that was raised.
    """

    def __init__(self, stage: str, original: BaseException) -> None:
        self.original = original
        super().__init__(
            f"internal error in {stage}: {type(original).__name__}: {str(original)[:200]}"
        )


class MissingDependencyError(AgentProtoError, ImportError):
    """A feature was used whose optional dependency is not installed.

    Importing the feature works (``import *``, ``hasattr`` and ``dir()`` included);
    using it raises this error, which says what to install.

    Attributes:
        feature: what was used, e.g. ``"agentproto.agui.HttpAgent"``.
        name: the missing module, e.g. ``"httpx"`` (as for every ``ImportError``).
        install: the command that installs it, e.g. ``"pip install 'agentproto[http]'"``.
    """

    def __init__(self, feature: str, module: str, install: str) -> None:
        self.feature = feature
        self.install = install
        super().__init__(f"{feature} needs {module}: {install}", name=module)


# ---- the transports: ACP connections -----------------------------------------------------


class ConnectionClosedError(AgentProtoError, ConnectionError):
    """An ACP connection closed: pending requests fail with it, and so does sending on it.

    Closing breaks no rule, so this is not a :class:`ProtocolError`: when the peer
    did break the protocol, the :class:`ProtocolError` that made the connection
    close is this error's ``__cause__`` (and the connection's ``error``).

    The message ends with who closed the connection: ``(closed by the peer)`` or
    ``(closed here)``.

    Attributes:
        code: ``connection.closed`` / ``rpc.closed`` (the connection, or its sans-I/O
            endpoint, is closed) or ``connection.broken`` (its byte stream failed).
        by_peer: ``True`` when the connection ended without this side closing it
            (the peer's stream ended or failed, or the peer broke the protocol);
            ``False`` when it was closed here (``close()``, leaving ``async with``).
    """

    def __init__(self, code: str, message: str, *, by_peer: bool) -> None:
        self.code = code
        self.by_peer = by_peer
        super().__init__(f"{message} ({'closed by the peer' if by_peer else 'closed here'})")


class RequestTimeoutError(AgentProtoError, TimeoutError):
    """A request got no response within its timeout (the peer was asked to cancel it).

    Attributes:
        method: the request's method.
        timeout: the timeout, in seconds.
    """

    def __init__(self, method: str, timeout: float) -> None:
        self.method = method
        self.timeout = timeout
        super().__init__(f"{method}: no response within {timeout:g} s")


class RpcError(AgentProtoError):
    """A JSON-RPC error response, as an exception.

    Raised by an ACP connection's ``request()`` when the peer answers with an error;
    raise it from a request handler to answer with this error.

    Attributes:
        code: the error code as given; the SDK gives an
            :class:`~agentproto.acp.RpcErrorCode` member for every code the schema
            names (those it reads from the wire included), a plain ``int`` otherwise.
        message: the error's short message.
        data: the error's ``data`` (plain JSON), ``None`` when absent.
        method: the method of the request it answers, when known.
    """

    def __init__(
        self, code: int, message: str, data: Any = None, *, method: str | None = None
    ) -> None:
        self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} (error {int(code)})")

    @classmethod
    def from_error(cls, error: dict[str, Any], *, method: str | None = None) -> RpcError:
        """The exception of a response's ``error`` object (already shape-checked).

        ``-32000`` becomes an :class:`AuthRequiredError`; the code is kept as the
        object holds it (the ACP endpoint names it with ``RpcErrorCode`` first).
        """
        if error["code"] == _AUTHENTICATION_REQUIRED:
            auth = AuthRequiredError(error["message"], error.get("data"), method=method)
            auth.code = error["code"]
            return auth
        return cls(error["code"], error["message"], error.get("data"), method=method)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        error: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class AuthRequiredError(RpcError):
    """``-32000``, authentication required: the agent wants ``auth/login`` first.

    A call raises it when the agent answers so (``session/new`` may); an agent's
    handler raises it to answer so. The client then logs in with one of
    :attr:`auth_methods` and calls again.

    Attributes:
        auth_methods: the advertised methods the client may pass to
            ``auth/login`` (those of type ``agent``), as :class:`~agentproto.acp.AcpClient`
            read them from the ``initialize`` answer; empty on a bare connection.
    """

    def __init__(
        self,
        message: str = "authentication required",
        data: Any = None,
        *,
        method: str | None = None,
    ) -> None:
        super().__init__(_AUTHENTICATION_REQUIRED, message, data, method=method)
        self.auth_methods: list[Any] = []


class MethodTableError(AgentProtoError, RuntimeError):
    """A generated ACP module's ``METHODS`` table is missing or inconsistent (a bad
    regeneration: the table names a type the module lacks).

    Raised while :mod:`agentproto.acp` is imported, so no public module exports it: a
    maintainer meets it, and regenerates.
    """


# ---- the transports: AG-UI over HTTP ------------------------------------------------------


# ---- the stores: event logs and thread stores ----------------------------------------------


class StoreError(AgentProtoError):
    """An event log or thread store failed (a lost Redis connection, a full disk).

    Nothing was half-written: an append either stored every frame it was given or
    none. The backend's own exception is the ``__cause__``.

    Attributes:
        operation: what was asked of the store (``"append"``, ``"read"``, ...).
    """

    def __init__(self, operation: str, message: str) -> None:
        self.operation = operation
        super().__init__(f"{operation}: {message}")


class CursorError(AgentProtoError, ValueError):
    """A stream position sent by a client names nothing this log can serve.

    The cursor is malformed, was issued for another stream, or points past the
    stream's last frame: a client's mistake (or a forgery), answered with a 4xx and
    never with another stream's frames.

    Attributes:
        code: a stable machine-readable code (``"store.cursor-malformed"``,
            ``"store.cursor-foreign"``, ``"store.cursor-ahead"``, ...).
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        super().__init__(message)


class CursorExpiredError(CursorError):
    """The log no longer holds the cursor's position (retention dropped it).

    The frames after it cannot be replayed one by one: a server answers with
    snapshots that rebuild the client's state, then the live tail.

    Attributes:
        held_after: the cursor reading after which gives every frame the stream
            still holds (``None``: the stream is gone whole).
    """

    def __init__(self, code: str, message: str, held_after: str | None = None) -> None:
        self.held_after = held_after
        super().__init__(code, message)


class UnknownStreamError(CursorError, LookupError):
    """The log holds no stream of that name (never written, or dropped whole)."""


class HttpError(AgentProtoError):
    """The HTTP exchange with an AG-UI agent failed (not a rule of the protocol).

    Attributes:
        code: what failed: ``http.status`` (:class:`HttpStatusError`),
            ``http.connect-timeout`` / ``http.read-timeout`` / ``http.write-timeout`` /
            ``http.pool-timeout`` / ``http.run-timeout`` (:class:`HttpTimeoutError`),
            ``http.connect-failed``, ``http.network`` (the connection failed
            before the stream began) or ``http.cancelled`` (the client stopped
            reading a run before it ended: the failed run's ``violation``).
        url: the agent's URL.
    """

    def __init__(self, code: str, message: str, *, url: str) -> None:
        self.code = code
        self.url = url
        super().__init__(message)


class HttpStatusError(HttpError):
    """The agent answered with a status other than 2xx.

    Attributes:
        status: the HTTP status code.
        body: the answer's JSON body (``agent_app`` sends ``{"error": ..., ...}``),
            or ``None`` when it had none or it was not JSON.
        text: the start of the body as text (at most
            :data:`~agentproto.agui._http.exchange.ERROR_BODY_BYTES`).
    """

    def __init__(self, status: int, reason: str, *, url: str, body: Any, text: str) -> None:
        self.status = status
        self.body = body
        self.text = text
        shown = text if body is None else _compact(body)
        detail = f": {shown[:500]}" if shown else ""
        super().__init__("http.status", f"the agent answered {status} {reason}{detail}", url=url)


class HttpTimeoutError(HttpError, TimeoutError):
    """The agent did not connect, accept the request or send bytes in time.

    Attributes:
        timeout: the limit that was reached, in seconds (``None`` when unknown).
    """

    def __init__(self, code: str, message: str, *, url: str, timeout: float | None) -> None:
        self.timeout = timeout
        super().__init__(code, message, url=url)


def _compact(body: Any) -> str:
    """A parsed JSON body as compact JSON text, for a message (the body is plain JSON)."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=repr)


# ---- helpers for the SDK's own modules ----------------------------------------------------


def as_sdk_error(exc: BaseException, stage: str) -> AgentProtoError:
    """``exc`` itself when it is an SDK error, else an :class:`InternalError` chaining it."""
    if isinstance(exc, AgentProtoError):
        return exc
    error = InternalError(stage, exc)
    error.__cause__ = exc
    return error


def chained(error: _E, cause: BaseException | None) -> _E:
    """``error`` with ``cause`` as its ``__cause__``: ``raise chained(e, c)`` is ``raise e from c``.

    The modules of the compiled build (``hatch_build.py``) raise this way: mypyc drops
    the ``from`` clause of a ``raise`` (the cause, and the context hidden by ``from None``).
    """
    error.__cause__ = cause  # also hides the context, as ``from`` does
    return error
