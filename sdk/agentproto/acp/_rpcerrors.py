"""Errors of ACP connections: error codes, error responses, and who broke what.

The names of the codes are ours; their values are checked against the codes the
generated modules list for the schema's ``ErrorCode`` when this module is
imported, so a regeneration that drops or renumbers one fails loudly.
"""

from __future__ import annotations

import enum
from typing import Any

from agentproto._core.errors import AgentProtoError, ProtocolError
from agentproto.acp import _generated_v1, _generated_v2

__all__ = [
    "ConnectionClosedError",
    "PeerProtocolError",
    "RequestTimeoutError",
    "RpcError",
    "RpcErrorCode",
]


class RpcErrorCode(enum.IntEnum):
    """The error codes the ACP schema defines (``ErrorCode``)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002
    UNSUPPORTED_PROTOCOL_VERSION = -32022


def _check_codes() -> None:
    """Fail the import when the generated code no longer lists one of our codes."""
    v2 = set(_generated_v2.ENUM_VALUES["ErrorCode"])
    v1 = set(_generated_v1.ENUM_VALUES["ErrorCode"])
    missing = [code.name for code in RpcErrorCode if code not in v2]
    missing += [
        f"{code.name} (v1)"
        for code in RpcErrorCode
        if code not in v1 and code is not RpcErrorCode.UNSUPPORTED_PROTOCOL_VERSION
    ]
    if missing:
        raise ImportError(f"ErrorCode values not in the generated schema: {', '.join(missing)}")


_check_codes()


class RpcError(AgentProtoError):
    """A JSON-RPC error response, as an exception.

    Raised by a connection's ``request()`` when the peer answers with an error;
    raise it from a request handler to answer with this error.

    Attributes:
        code: the error code (an :class:`RpcErrorCode` when the schema names it).
        message: the error's short message.
        data: the error's ``data`` (plain JSON), ``None`` when absent.
        method: the method of the request it answers, when known.
    """

    def __init__(
        self, code: int, message: str, data: Any = None, *, method: str | None = None
    ) -> None:
        try:
            self.code: int = RpcErrorCode(code)
        except ValueError:
            self.code = code
        self.message = message
        self.data = data
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} (error {code})")

    @classmethod
    def from_error(cls, error: dict[str, Any], *, method: str | None = None) -> RpcError:
        """The exception of a response's ``error`` object (already shape-checked)."""
        return cls(error["code"], error["message"], error.get("data"), method=method)

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object."""
        error: dict[str, Any] = {"code": int(self.code), "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class PeerProtocolError(ProtocolError):
    """The peer broke JSON-RPC or ACP (a result the schema rejects, an overlong line)."""


class ConnectionClosedError(ProtocolError):
    """The connection closed (the peer went away, or it was closed here).

    Pending requests fail with it; so does sending on a closed connection.
    """


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
