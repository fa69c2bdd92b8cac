"""The public namespaces export exactly the curated names (as httpx pins its ``__all__``)."""

from __future__ import annotations

import importlib
import types

import pytest

import agentproto
import agentproto.acp
import agentproto.agui

EXPECTED_ALL = {
    "agentproto": [
        "AgentProtoError",
        "DecodeError",
        "Diagnostic",
        "PatchError",
        "ProtocolError",
        "SchemaError",
        "UsageError",
        "log_diagnostics",
    ],
    "agentproto.agui": [
        "PROTOCOL_VERSION",
        "Change",
        "Consumer",
        "Conversation",
        "Event",
        "EventDecoder",
        "EventStreamResponse",
        "Message",
        "Middleware",
        "RunProducer",
        "RunRecord",
        "aconsume",
        "agent_app",
        "aiter_events",
        "consume",
        "dump_event",
        "dump_run_input",
        "encode_event_jsonl",
        "encode_event_sse",
        "encode_jsonl_stream",
        "encode_sse_stream",
        "iter_events",
        "make_converter",
        "next_run_input",
        "parse_event",
        "parse_message",
        "parse_run_input",
        "run_events",
        "schema",
        "stream_headers",
    ],
    "agentproto.acp": [
        "UNSET",
        "CompactionState",
        "MessageReader",
        "MessageState",
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
        "parse_permission_request",
        "parse_session_notification",
        "parse_session_update",
        "permission_request",
        "resync_update",
        "schema",
        "schema_v1",
        "session_notification",
    ],
}


def _module(name: str) -> types.ModuleType:
    return importlib.import_module(name)


@pytest.mark.parametrize("name", sorted(EXPECTED_ALL))
def test_all_is_pinned(name: str) -> None:
    """A public package's ``__all__`` is exactly the pinned list (adding a name is a decision)."""
    assert sorted(_module(name).__all__) == sorted(EXPECTED_ALL[name])
    assert len(set(_module(name).__all__)) == len(_module(name).__all__)


@pytest.mark.parametrize("name", sorted(EXPECTED_ALL))
def test_all_names_exist(name: str) -> None:
    """Every name a public package lists in ``__all__`` is an attribute of it."""
    module = _module(name)
    missing = [attr for attr in module.__all__ if not hasattr(module, attr)]
    assert missing == []


def test_schema_namespaces_reach_generated_classes() -> None:
    """The typed layers are reachable as ``agentproto.agui.schema`` / ``agentproto.acp.schema``."""
    from agentproto.acp._generated_v2 import ToolCallUpdateSessionUpdate
    from agentproto.agui._generated import TextMessageStartEvent

    assert agentproto.agui.schema.TextMessageStartEvent is TextMessageStartEvent
    assert agentproto.acp.schema.ToolCallUpdateSessionUpdate is ToolCallUpdateSessionUpdate


def test_exported_exceptions_share_the_root() -> None:
    """Every exception class ``agentproto`` exports subclasses ``agentproto.AgentProtoError``."""
    exported = [getattr(agentproto, name) for name in agentproto.__all__]
    exceptions = [obj for obj in exported if isinstance(obj, type) and issubclass(obj, Exception)]
    assert exceptions, "agentproto exports no exception class"
    for exc in exceptions:
        assert issubclass(exc, agentproto.AgentProtoError), exc
