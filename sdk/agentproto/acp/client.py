"""Writing an ACP v2 client (an editor): :class:`AcpClient`, its handlers and its sessions."""

from agentproto._core.exports import export
from agentproto.acp._client.client import (
    AcpClient,
    ClientHandlers,
    ClientSession,
)

__all__ = [
    "AcpClient",
    "ClientHandlers",
    "ClientSession",
]

export(__name__, globals(), __all__)
