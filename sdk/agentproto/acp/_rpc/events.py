"""The events an ACP JSON-RPC :class:`~agentproto.acp._rpc.endpoint.Endpoint` returns.

What the peer sent, typed: a request to answer, a notification, a response to
one of ours (or the error it carried), a cancellation of a request in flight.
Diagnostics (tolerated problems) come in the same list.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import AgentProtoError
from agentproto.acp._protocol.methods import MethodSpec

__all__ = [
    "CancelRequested",
    "Event",
    "NotificationReceived",
    "RequestFailed",
    "RequestReceived",
    "ResponseReceived",
]


class _Incoming:
    """What a received request and notification share: whether its method is an extension."""

    __slots__ = ()
    spec: MethodSpec | None

    @property
    def extension(self) -> bool:
        """Whether the method is an extension (``_``-prefixed) method, which has no ``spec``."""
        return self.spec is None


@attrs.frozen(kw_only=True)
class RequestReceived(_Incoming):
    """The peer sent a request this side handles; answer it once.

    Attributes:
        id: the peer's request id.
        method: the method.
        params: the typed params (plain JSON for an extension method, or when the
            generated code has no params type).
        spec: the method's table entry; ``None`` for an extension method.
        diagnostics: what was tolerated while reading the params.
    """

    id: int | str
    method: str
    params: Any
    spec: MethodSpec | None
    diagnostics: tuple[Diagnostic, ...] = ()


@attrs.frozen(kw_only=True)
class NotificationReceived(_Incoming):
    """The peer sent a notification this side handles.

    Attributes:
        method: the method.
        params: the typed params (plain JSON for an extension notification).
        spec: the method's table entry; ``None`` for an extension notification.
        diagnostics: what was tolerated while reading the params.
    """

    method: str
    params: Any
    spec: MethodSpec | None
    diagnostics: tuple[Diagnostic, ...] = ()


@attrs.frozen(kw_only=True)
class ResponseReceived:
    """The peer answered one of our requests with a result.

    Attributes:
        id: our request id.
        method: the request's method.
        result: the typed result (plain JSON when untyped).
    """

    id: int
    method: str
    result: Any


@attrs.frozen(kw_only=True)
class RequestFailed:
    """One of our requests failed.

    Attributes:
        id: our request id.
        method: the request's method.
        error: an :class:`RpcError` (the peer answered with an error), a
            :class:`~agentproto.ProtocolError` (its result does not match the schema)
            or a :class:`ConnectionClosedError` (the connection closed first).
    """

    id: int
    method: str
    error: AgentProtoError


@attrs.frozen(kw_only=True)
class CancelRequested:
    """The peer asked to cancel a request of its own that is still in flight.

    Attributes:
        id: the peer's request id.
        method: the request's method.
    """

    id: int | str
    method: str


Event: TypeAlias = (
    RequestReceived
    | NotificationReceived
    | ResponseReceived
    | RequestFailed
    | CancelRequested
    | Diagnostic
)
"""Anything :meth:`agentproto.acp._rpc.endpoint.Endpoint.receive` returns."""
