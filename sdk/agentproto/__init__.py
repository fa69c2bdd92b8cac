"""agentproto: typed SDK for the AG-UI and ACP v2 agent streaming protocols."""

from agentproto._core.errors import (
    AgentProtoError,
    DecodeError,
    PatchError,
    ProtocolError,
    SchemaError,
    UsageError,
)

__all__ = [
    "AgentProtoError",
    "DecodeError",
    "PatchError",
    "ProtocolError",
    "SchemaError",
    "UsageError",
]
