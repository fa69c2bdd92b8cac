"""ACP v2: agents and clients (code editors) over JSON-RPC, and the session state they share.

The typed layer (every schema class) is :mod:`agentproto.acp.schema` (v1:
:mod:`agentproto.acp.schema_v1`); this package exports the hand-written API:
writing an agent (:class:`Agent`, :class:`AgentSession`, :func:`serve_agent`) and a
client (:class:`AcpClient`, :class:`ClientHandlers`), parsing and dumping updates,
JSON-RPC framing over NDJSON, the session state a client keeps
(:class:`SessionState`, :class:`SessionStore`), the metadata patch rule and what
intermediaries need (:func:`combine`, :func:`resync_update`, the v1 ↔ v2 adapters).

ACP v1 is imported when first used: :mod:`agentproto.acp.schema_v1`,
:class:`V1ToV2Adapter` and :class:`V2ToV1Adapter` are loaded on first access (and a
v1 peer loads them when it connects), so that ``import agentproto.acp`` does not pay
for the v1 schema.

Deprecated, kept for one release: ``Phase``, an alias of :data:`TurnPhase` (a
session's turn; :mod:`agentproto.agui` has a ``Phase`` of its own), and
``PeerProtocolError``, an alias of :class:`agentproto.ProtocolError`.
"""

from typing import TYPE_CHECKING, Any

from agentproto._core.errors import (
    AuthRequiredError,
    ConnectionClosedError,
    PeerProtocolError,
    RequestTimeoutError,
    RpcError,
    UnsupportedVersionError,
)
from agentproto._core.exports import export
from agentproto._core.reconnect import Reconnect
from agentproto._core.unset import UNSET, Unset
from agentproto.acp import schema
from agentproto.acp._agent.agent import Agent, AgentSession
from agentproto.acp._agent.runner import AgentRunner, run_agent, serve_agent
from agentproto.acp._agent.updates import SessionUpdates, Terminal, ToolCall
from agentproto.acp._client.client import AcpClient, Answer, ClientHandlers, ClientSession
from agentproto.acp._client.unstable import UnstableCalls
from agentproto.acp._generated_v2 import SessionUpdate
from agentproto.acp._io.connection import (
    AgentSideConnection,
    BatchCall,
    ByteReader,
    ByteWriter,
    ClientSideConnection,
    Connection,
    ExtensionHandler,
)
from agentproto.acp._io.connection import Handler as MethodHandler
from agentproto.acp._io.transports import MemoryPipe
from agentproto.acp._protocol.blocks import Content
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.jsonrpc import Message as JsonRpcMessage
from agentproto.acp._protocol.jsonrpc import (
    MessageReader,
    Notification,
    Request,
    Response,
    encode_message,
)
from agentproto.acp._protocol.jsonrpc import parse_message as parse_jsonrpc_message
from agentproto.acp._protocol.permission import PermissionDecision
from agentproto.acp._protocol.wire import (
    dump_session_update,
    make_converter,
    make_v1_converter,
    parse_permission_request,
    parse_session_notification,
    parse_session_update,
    permission_request,
    session_notification,
)
from agentproto.acp._relay.combine import combine, resync_update
from agentproto.acp._rpc.endpoint import Side
from agentproto.acp._rpc.turn import Foreground, Phase, TurnPhase
from agentproto.acp._serve.app import acp_app
from agentproto.acp._state.entities import (
    CompactionState,
    Entity,
    MessageState,
    PlanState,
    SessionInfoState,
    SessionMessageState,
    SubagentState,
    TerminalState,
    ToolCallState,
)
from agentproto.acp._state.meta import Meta, apply_meta_update
from agentproto.acp._state.session import SessionState
from agentproto.acp._state.store import SessionStore

if TYPE_CHECKING:
    from agentproto.acp import schema_v1
    from agentproto.acp._relay.to_v1 import V2ToV1Adapter
    from agentproto.acp._relay.versions import V1ToV2Adapter

__all__ = [
    "UNSET",
    "AcpClient",
    "Agent",
    "AgentRunner",
    "AgentSession",
    "AgentSideConnection",
    "Answer",
    "AuthRequiredError",
    "BatchCall",
    "ByteReader",
    "ByteWriter",
    "ClientHandlers",
    "ClientSession",
    "ClientSideConnection",
    "CompactionState",
    "Connection",
    "ConnectionClosedError",
    "Content",
    "Entity",
    "ExtensionHandler",
    "Foreground",
    "JsonRpcMessage",
    "MemoryPipe",
    "MessageReader",
    "MessageState",
    "Meta",
    "MethodHandler",
    "Notification",
    "PeerProtocolError",
    "PermissionDecision",
    "Phase",
    "PlanState",
    "Reconnect",
    "Request",
    "RequestTimeoutError",
    "Response",
    "RpcError",
    "RpcErrorCode",
    "SessionInfoState",
    "SessionMessageState",
    "SessionState",
    "SessionStore",
    "SessionUpdate",
    "SessionUpdates",
    "Side",
    "SubagentState",
    "Terminal",
    "TerminalState",
    "ToolCall",
    "ToolCallState",
    "TurnPhase",
    "Unset",
    "UnstableCalls",
    "UnsupportedVersionError",
    "V1ToV2Adapter",
    "V2ToV1Adapter",
    "acp_app",
    "apply_meta_update",
    "combine",
    "dump_session_update",
    "encode_message",
    "make_converter",
    "make_v1_converter",
    "parse_jsonrpc_message",
    "parse_permission_request",
    "parse_session_notification",
    "parse_session_update",
    "permission_request",
    "resync_update",
    "run_agent",
    "schema",
    "schema_v1",
    "serve_agent",
    "session_notification",
]

export(__name__, globals(), [name for name in __all__ if name in globals()])

_V1_NAMES = ("V1ToV2Adapter", "V2ToV1Adapter", "schema_v1")


def __getattr__(name: str) -> Any:
    # ACP v1 (its schema and the adapters that import it) is imported on first use
    import importlib

    if name == "schema_v1":
        value = importlib.import_module("agentproto.acp.schema_v1")
    elif name in _V1_NAMES:
        from agentproto.acp._relay import to_v1, versions

        value = getattr(to_v1 if name == "V2ToV1Adapter" else versions, name)
        export(__name__, {name: value}, [name])
    else:
        raise AttributeError(f"module 'agentproto.acp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_V1_NAMES})
