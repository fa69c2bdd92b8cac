"""ACP protocol version negotiation (``initialize``), both sides.

Theory of operation
-------------------
The client sends the latest protocol version it supports. The agent answers
the highest version *it* supports that is at or below the client's; when it
supports none, ``initialize`` fails with the schema's ``unsupported protocol
version`` error (``-32022``), whose ``data`` lists the requested version and
the versions the agent supports (``UnsupportedProtocolVersionErrorData``). The
client then checks the answer: a version above the one it requested breaks the
rule, and a version it does not support means it must not go on; either way
the client reports :class:`UnsupportedVersionError` and closes the connection.
"""

from __future__ import annotations

from collections.abc import Iterable

from agentproto._core.errors import RpcError, UnsupportedVersionError, UsageError
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.wire import CONVERTER

__all__ = ["SUPPORTED_VERSIONS", "check_answer", "negotiate"]

SUPPORTED_VERSIONS: tuple[int, ...] = (1, 2)
"""The protocol versions this SDK's agents and clients speak on the wire (a v1 peer is
bridged: v1 on the wire, v2 to the application, see :mod:`agentproto.acp._io.v1bridge`)."""


def _versions(supported: Iterable[int]) -> tuple[int, ...]:
    versions = tuple(sorted(set(supported)))
    if not versions or not all(isinstance(v, int) and 0 <= v <= 0xFFFF for v in versions):
        raise UsageError(
            "initialize.bad-versions", f"supported versions must be uint16 values, not {versions!r}"
        )
    return versions


def negotiate(requested: int, supported: Iterable[int] = SUPPORTED_VERSIONS) -> int:
    """The version an agent answers: its highest at or below ``requested``.

    Args:
        requested: the client's ``protocolVersion``.
        supported: the versions the agent supports.

    Returns:
        The negotiated version.

    Raises:
        RpcError: ``-32022`` (unsupported protocol version) with the schema's
            error data, when no supported version is at or below ``requested``.
        UsageError: ``supported`` is empty or holds a value that is not a version.
    """
    versions = _versions(supported)
    below = [version for version in versions if version <= requested]
    if below:
        return below[-1]
    data = CONVERTER.dump(
        v2.UnsupportedProtocolVersionErrorData(requested=requested, supported=list(versions))
    )
    message = f"unsupported protocol version {requested} (this agent supports {list(versions)})"
    raise RpcError(RpcErrorCode.UNSUPPORTED_PROTOCOL_VERSION, message, data)


def check_answer(
    requested: int, answered: int, supported: Iterable[int] = SUPPORTED_VERSIONS
) -> int:
    """Check the agent's answer on the client side.

    Args:
        requested: the version the client sent.
        answered: the agent's ``protocolVersion``.
        supported: the versions the client supports.

    Returns:
        ``answered``, when the client can go on with it.

    Raises:
        UnsupportedVersionError: the answer is above ``requested`` (the agent
            broke the rule) or a version the client does not support.
    """
    versions = _versions(supported)
    if answered > requested:
        message = f"the agent answered protocol version {answered}, above the requested {requested}"
    elif answered not in versions:
        message = (
            f"the agent answered protocol version {answered}; this client supports {list(versions)}"
        )
    else:
        return answered
    raise UnsupportedVersionError(
        message, requested=requested, offered=answered, supported=versions
    )


def refused(requested: int, error: RpcError) -> UnsupportedVersionError:
    """The client-side error for an agent's ``-32022`` answer (its data read when well formed)."""
    supported: tuple[int, ...] = ()
    data = error.data
    if isinstance(data, dict):
        try:
            parsed = CONVERTER.load(data, v2.UnsupportedProtocolVersionErrorData)
            supported = tuple(parsed.supported)
        except ValueError:
            supported = ()
    message = f"the agent supports no protocol version at or below {requested}"
    if supported:
        message += f" (it supports {list(supported)})"
    failure = UnsupportedVersionError(
        message, requested=requested, offered=None, supported=supported
    )
    failure.__cause__ = error
    return failure
