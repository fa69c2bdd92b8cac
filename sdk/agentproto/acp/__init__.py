"""ACP v2: agent ↔ code-editor ``session/update`` upserts.

The typed layer (every schema class) is :mod:`agentproto.acp.schema` (v1:
:mod:`agentproto.acp.schema_v1`); this package exports the hand-written API:
parsing and dumping updates, JSON-RPC framing over NDJSON, the session state a
client keeps (:class:`SessionState`, :class:`SessionStore`), the metadata
patch rule and what intermediaries need (:func:`combine`,
:func:`resync_update`, the v1 ↔ v2 adapters).
"""

from agentproto._core.unset import UNSET, Unset
from agentproto.acp import schema, schema_v1
from agentproto.acp._combine import combine, resync_update
from agentproto.acp._generated_v2 import SessionUpdate
from agentproto.acp._jsonrpc import Message as JsonRpcMessage
from agentproto.acp._jsonrpc import MessageReader, Notification, Request, Response, encode_message
from agentproto.acp._jsonrpc import parse_message as parse_jsonrpc_message
from agentproto.acp._meta import Meta, apply_meta_update
from agentproto.acp._records import (
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
from agentproto.acp._session import SessionState
from agentproto.acp._store import SessionStore
from agentproto.acp._versions import V1ToV2Adapter, V2ToV1Adapter
from agentproto.acp._wire import (
    dump_session_update,
    make_converter,
    make_v1_converter,
    parse_permission_request,
    parse_session_notification,
    parse_session_update,
    permission_request,
    session_notification,
)

__all__ = [
    "UNSET",
    "CompactionState",
    "Entity",
    "JsonRpcMessage",
    "MessageReader",
    "MessageState",
    "Meta",
    "Notification",
    "PlanState",
    "Request",
    "Response",
    "SessionInfoState",
    "SessionMessageState",
    "SessionState",
    "SessionStore",
    "SessionUpdate",
    "SubagentState",
    "TerminalState",
    "ToolCallState",
    "Unset",
    "V1ToV2Adapter",
    "V2ToV1Adapter",
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
    "schema",
    "schema_v1",
    "session_notification",
]
