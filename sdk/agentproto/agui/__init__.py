"""AG-UI: agent ↔ user-interface events.

The typed layer (every schema class) is :mod:`agentproto.agui.schema`; this package
exports the hand-written API:

* wire conversion: :func:`parse_event`, :func:`dump_event` (and messages, run input);
* consuming a stream: :class:`Consumer` (the sans-I/O pipeline), :func:`iter_events`
  / :func:`aiter_events` over byte iterators, :func:`consume` / :func:`aconsume` to
  run a whole stream into state;
* state: :class:`Conversation` (the reducer) and :class:`Change`; :class:`StateView`
  reads the state as the application's own type;
* subagents: :class:`SubagentInvocation` (each invocation's status, from
  :attr:`Consumer.subagents`);
* capabilities: :class:`Capabilities` (what an agent declares, and the queries a
  client gates features on), :func:`parse_capabilities`, :func:`dump_capabilities`;
* the next request: :func:`next_run_input`, :func:`dump_run_input`;
* frontend tools (the client's own): :func:`unanswered_tool_calls`, and
  :func:`answer_tool_calls` / :func:`aanswer_tool_calls` to run the application's
  functions (:data:`ToolFunction`) into the tool messages the next input carries;
* interrupts and resume: :class:`OpenInterrupts` (what the run being continued left
  open, its expiry, the answers) and :data:`InterruptLookup` (for :func:`agent_app`);
* recorded histories: :class:`History` (JSON serialization, run lineage by
  ``parentRunId``, time travel) and :func:`compact_events` (:class:`Compaction`);
* producing: :class:`RunProducer` (typed helpers that enforce the producer duties),
  :func:`agent_app` / :class:`EventStreamResponse` (ASGI serving), the SSE and JSON
  Lines encoders; :func:`agent_route` / :func:`agent_api_route` (the agent as a
  Starlette / FastAPI route at an exact path), :func:`agent_router` (a FastAPI
  router for ``app.include_router``) and :func:`run_input_schema` (the run
  input's JSON Schema, e.g. for OpenAPI);
* running an agent over HTTP: :class:`HttpAgent` / :class:`AsyncHttpAgent` (httpx,
  the ``agentproto[http]`` extra, imported on first use of either name; without it
  either raises :class:`~agentproto.MissingDependencyError` when called),
  :class:`RunResult` (what ``run_to_end`` returns) and their errors
  :class:`HttpError`, :class:`HttpStatusError`, :class:`HttpTimeoutError`;
* fitting known peers: :mod:`agentproto.agui.quirks`, opt-in repairs of their bugs.

Deprecated, kept for one release: ``Phase``, an alias of :data:`RunPhase` (the
producer's phase; :mod:`agentproto.acp` has a ``Phase`` of its own).
"""

from typing import TYPE_CHECKING, Any

from agentproto._core.errors import HttpError, HttpStatusError, HttpTimeoutError, StateShapeError
from agentproto._core.exports import export
from agentproto._core.optional import stand_in
from agentproto.agui import quirks, schema
from agentproto.agui._consume.consumer import Consumer, DecoderOptions
from agentproto.agui._consume.decoder import EventDecoder, Middleware, NextStage
from agentproto.agui._consume.state_view import StateView
from agentproto.agui._consume.stream import aconsume, aiter_events, consume, iter_events
from agentproto.agui._generated import Event, Message
from agentproto.agui._history.history import Compaction, History, RecordedRun, compact_events
from agentproto.agui._http.reconnect import Reconnect
from agentproto.agui._http.websocket import WebSocketAgent
from agentproto.agui._produce.handles import (
    ReasoningMessageWriter,
    ReasoningSpan,
    RunScope,
    StepScope,
    SubagentScope,
    TextMessageWriter,
    ToolCallWriter,
)
from agentproto.agui._produce.producer import (
    Attribution,
    PatchLike,
    Phase,
    RunFinish,
    RunOutcome,
    RunPhase,
    RunProducer,
    Sink,
    SubagentOutcome,
    SubagentStart,
)
from agentproto.agui._protocol.capabilities import (
    CAPABILITY_FLAGS,
    Capabilities,
    dump_capabilities,
    parse_capabilities,
)
from agentproto.agui._protocol.encoding import (
    Transport,
    encode_event_jsonl,
    encode_event_sse,
    encode_jsonl_stream,
    encode_sse_stream,
    stream_headers,
)
from agentproto.agui._protocol.input_schema import run_input_schema
from agentproto.agui._protocol.wire import (
    dump_event,
    make_converter,
    parse_event,
    parse_message,
    parse_run_input,
)
from agentproto.agui._reduce.conversation import Change, Conversation
from agentproto.agui._serve import app as asgi
from agentproto.agui._serve.app import EventStreamResponse, agent_app, run_events
from agentproto.agui._serve.routes import agent_api_route, agent_route, agent_router
from agentproto.agui._thread.exchange import RunResult
from agentproto.agui._thread.frontend_tools import (
    ToolFunction,
    aanswer_tool_calls,
    answer_tool_calls,
    unanswered_tool_calls,
)
from agentproto.agui._thread.interrupts import InterruptLookup, OpenInterrupts
from agentproto.agui._thread.run_input import PROTOCOL_VERSION, dump_run_input, next_run_input
from agentproto.agui._verify.subagents import SubagentInvocation, SubagentStatus
from agentproto.agui._verify.verifier import RunRecord, RunStatus, Verifier

if TYPE_CHECKING:
    from agentproto.agui._http.client import AsyncHttpAgent, HttpAgent

__all__ = [
    "CAPABILITY_FLAGS",
    "PROTOCOL_VERSION",
    "AsyncHttpAgent",
    "Attribution",
    "Capabilities",
    "Change",
    "Compaction",
    "Consumer",
    "Conversation",
    "DecoderOptions",
    "Event",
    "EventDecoder",
    "EventStreamResponse",
    "History",
    "HttpAgent",
    "HttpError",
    "HttpStatusError",
    "HttpTimeoutError",
    "InterruptLookup",
    "Message",
    "Middleware",
    "NextStage",
    "OpenInterrupts",
    "PatchLike",
    "Phase",
    "ReasoningMessageWriter",
    "ReasoningSpan",
    "Reconnect",
    "RecordedRun",
    "RunFinish",
    "RunOutcome",
    "RunPhase",
    "RunProducer",
    "RunRecord",
    "RunResult",
    "RunScope",
    "RunStatus",
    "Sink",
    "StateShapeError",
    "StateView",
    "StepScope",
    "SubagentInvocation",
    "SubagentOutcome",
    "SubagentScope",
    "SubagentStart",
    "SubagentStatus",
    "TextMessageWriter",
    "ToolCallWriter",
    "ToolFunction",
    "Transport",
    "Verifier",
    "WebSocketAgent",
    "aanswer_tool_calls",
    "aconsume",
    "agent_api_route",
    "agent_app",
    "agent_route",
    "agent_router",
    "aiter_events",
    "answer_tool_calls",
    "asgi",
    "compact_events",
    "consume",
    "dump_capabilities",
    "dump_event",
    "dump_run_input",
    "encode_event_jsonl",
    "encode_event_sse",
    "encode_jsonl_stream",
    "encode_sse_stream",
    "iter_events",
    "make_converter",
    "next_run_input",
    "parse_capabilities",
    "parse_event",
    "parse_message",
    "parse_run_input",
    "quirks",
    "run_events",
    "run_input_schema",
    "schema",
    "stream_headers",
    "unanswered_tool_calls",
]

export(__name__, globals(), [name for name in __all__ if name in globals()])

_NEED_HTTPX = ("AsyncHttpAgent", "HttpAgent")


def __getattr__(name: str) -> Any:
    # the HTTP clients need httpx (the ``agentproto[http]`` extra): imported on first
    # use, so that ``import agentproto.agui`` works without it. Without httpx each is a
    # stand-in that raises MissingDependencyError when called, so ``import *``,
    # ``hasattr`` and ``dir()`` work either way.
    if name not in _NEED_HTTPX:
        raise AttributeError(f"module 'agentproto.agui' has no attribute {name!r}")
    try:
        from agentproto.agui._http import client as _http_client
    except ModuleNotFoundError as exc:
        if exc.name != "httpx":
            raise
        value = stand_in(f"{__name__}.{name}", "httpx", "pip install 'agentproto[http]'")
    else:
        value = getattr(_http_client, name)
        export(__name__, {name: value}, [name])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_NEED_HTTPX})
