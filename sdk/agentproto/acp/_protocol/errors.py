"""Errors of ACP connections: error codes, error responses, and who broke what.

The error codes and their names are the schema's: :data:`RpcErrorCode` is the
enumeration the code generator emits for the v2 schema's ``ErrorCode`` (each
titled code, named by its title: ``Method not found`` is ``METHOD_NOT_FOUND``).
A code the schema does not name stays a plain ``int``.
"""

from __future__ import annotations

from typing import Any

from agentproto._core.errors import AgentProtoError, ProtocolError
from agentproto.acp._generated_v2 import KnownErrorCode

__all__ = [
    "AuthRequiredError",
    "ConnectionClosedError",
    "PeerProtocolError",
    "RequestTimeoutError",
    "RpcError",
    "RpcErrorCode",
]

RpcErrorCode = KnownErrorCode
"""The error codes the ACP v2 schema names (an ``enum.IntEnum``, generated)."""


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
        """The exception of a response's ``error`` object (already shape-checked).

        ``-32000`` becomes an :class:`AuthRequiredError`.
        """
        if error["code"] == RpcErrorCode.AUTHENTICATION_REQUIRED:
            return AuthRequiredError(error["message"], error.get("data"), method=method)
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
        super().__init__(RpcErrorCode.AUTHENTICATION_REQUIRED, message, data, method=method)
        self.auth_methods: list[Any] = []


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
