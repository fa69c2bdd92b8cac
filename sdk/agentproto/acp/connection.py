"""ACP connections over asyncio byte streams: both sides of one JSON-RPC connection."""

from agentproto._core.exports import export
from agentproto.acp._io.connection import (
    AgentSideConnection,
    BatchCall,
    ByteReader,
    ByteWriter,
    ClientSideConnection,
    Connection,
)

__all__ = [
    "AgentSideConnection",
    "BatchCall",
    "ByteReader",
    "ByteWriter",
    "ClientSideConnection",
    "Connection",
]

export(__name__, globals(), __all__)
