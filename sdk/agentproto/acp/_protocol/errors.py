"""ACP error codes: the schema's names for them, and an error response read as an exception.

The error codes and their names are the schema's: :data:`RpcErrorCode` is the
enumeration the code generator emits for the v2 schema's ``ErrorCode`` (each
titled code, named by its title: ``Method not found`` is ``METHOD_NOT_FOUND``).
A code the schema does not name stays a plain ``int``.

The exception classes of ACP connections (:class:`~agentproto.acp.RpcError`,
:class:`~agentproto.acp.ConnectionClosedError`, ...) are defined with the rest of the
tree in :mod:`agentproto._core.errors`; :mod:`agentproto.acp` re-exports them.
"""

from __future__ import annotations

from typing import Any

from agentproto._core.errors import RpcError
from agentproto.acp._generated_v2 import KnownErrorCode

__all__ = ["RpcErrorCode", "known_code", "response_error"]

RpcErrorCode = KnownErrorCode
"""The error codes the ACP v2 schema names (an ``enum.IntEnum``, generated)."""


def known_code(code: int) -> int:
    """``code`` as its :data:`RpcErrorCode` member when the schema names it, else as given."""
    try:
        return RpcErrorCode(code)
    except ValueError:
        return code


def response_error(error: dict[str, Any], *, method: str | None = None) -> RpcError:
    """The exception of a response's ``error`` object (already shape-checked).

    Its code is an :data:`RpcErrorCode` member when the schema names it; ``-32000``
    becomes an :class:`~agentproto.acp.AuthRequiredError`.
    """
    return RpcError.from_error({**error, "code": known_code(error["code"])}, method=method)
