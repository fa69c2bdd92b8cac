"""agentproto: typed SDK for the AG-UI and ACP v2 agent streaming protocols.

Protocol APIs live in :mod:`agentproto.agui` and :mod:`agentproto.acp`. This package
exports what both share: the exception hierarchy rooted at :class:`AgentProtoError`,
and :class:`Diagnostic`, the record of a problem the protocols say to tolerate.
"""

from agentproto._core.converter import WireConverter
from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import (
    AgentProtoError,
    DecodeError,
    InternalError,
    LimitError,
    PatchError,
    ProtocolError,
    SchemaError,
    UsageError,
)

__all__ = [
    "AgentProtoError",
    "DecodeError",
    "Diagnostic",
    "InternalError",
    "LimitError",
    "PatchError",
    "ProtocolError",
    "SchemaError",
    "UsageError",
    "WireConverter",
    "log_diagnostics",
]
