"""AG-UI: agent ↔ user-interface events.

The typed layer (every schema class) is :mod:`agentproto.agui.schema`; this package
exports the hand-written API:

* wire conversion: :func:`parse_event`, :func:`dump_event` (and messages, run input);
* consuming a stream: :class:`Consumer` (the sans-I/O pipeline), :func:`iter_events`
  / :func:`aiter_events` over byte iterators, :func:`consume` / :func:`aconsume` to
  run a whole stream into state;
* state: :class:`Conversation` (the reducer) and :class:`Change`;
* the next request: :func:`next_run_input`, :func:`dump_run_input`;
* recorded histories: :class:`History` (JSON serialization, run lineage by
  ``parentRunId``, time travel) and :func:`compact_events` (:class:`Compaction`);
* producing: :class:`RunProducer` (typed helpers that enforce the producer duties),
  :func:`agent_app` / :class:`EventStreamResponse` (ASGI serving), the SSE and JSON
  Lines encoders;
* running an agent over HTTP: :class:`HttpAgent` / :class:`AsyncHttpAgent` (httpx,
  the ``agentproto[http]`` extra, imported on first use of either name) and their
  errors :class:`HttpError`, :class:`HttpStatusError`, :class:`HttpTimeoutError`;
* fitting known peers: :mod:`agentproto.agui.quirks`, opt-in repairs of their bugs.
"""

from typing import TYPE_CHECKING, Any

from agentproto.agui import asgi, quirks, schema
from agentproto.agui._consumer import Consumer
from agentproto.agui._conversation import Change, Conversation
from agentproto.agui._decoder import EventDecoder, Middleware, NextStage, Transport
from agentproto.agui._emit_messages import Attribution
from agentproto.agui._emit_run import (
    PatchLike,
    RunFinish,
    RunOutcome,
    SubagentOutcome,
    SubagentStart,
)
from agentproto.agui._encoding import (
    encode_event_jsonl,
    encode_event_sse,
    encode_jsonl_stream,
    encode_sse_stream,
    stream_headers,
)
from agentproto.agui._generated import Event, Message
from agentproto.agui._handles import (
    ReasoningMessageWriter,
    ReasoningSpan,
    RunScope,
    StepScope,
    SubagentScope,
    TextMessageWriter,
    ToolCallWriter,
)
from agentproto.agui._history import Compaction, History, RecordedRun, compact_events
from agentproto.agui._http_run import HttpError, HttpStatusError, HttpTimeoutError
from agentproto.agui._producer import Phase, RunProducer, Sink
from agentproto.agui._run_input import PROTOCOL_VERSION, dump_run_input, next_run_input
from agentproto.agui._stream import aconsume, aiter_events, consume, iter_events
from agentproto.agui._verify import RunRecord, RunStatus, Verifier
from agentproto.agui._wire import (
    dump_event,
    make_converter,
    parse_event,
    parse_message,
    parse_run_input,
)
from agentproto.agui.asgi import EventStreamResponse, agent_app, run_events

if TYPE_CHECKING:
    from agentproto.agui._http_client import AsyncHttpAgent, HttpAgent

__all__ = [
    "PROTOCOL_VERSION",
    "AsyncHttpAgent",
    "Attribution",
    "Change",
    "Compaction",
    "Consumer",
    "Conversation",
    "Event",
    "EventDecoder",
    "EventStreamResponse",
    "History",
    "HttpAgent",
    "HttpError",
    "HttpStatusError",
    "HttpTimeoutError",
    "Message",
    "Middleware",
    "NextStage",
    "PatchLike",
    "Phase",
    "ReasoningMessageWriter",
    "ReasoningSpan",
    "RecordedRun",
    "RunFinish",
    "RunOutcome",
    "RunProducer",
    "RunRecord",
    "RunScope",
    "RunStatus",
    "Sink",
    "StepScope",
    "SubagentOutcome",
    "SubagentScope",
    "SubagentStart",
    "TextMessageWriter",
    "ToolCallWriter",
    "Transport",
    "Verifier",
    "aconsume",
    "agent_app",
    "aiter_events",
    "asgi",
    "compact_events",
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
    "quirks",
    "run_events",
    "schema",
    "stream_headers",
]

_NEED_HTTPX = ("AsyncHttpAgent", "HttpAgent")


def __getattr__(name: str) -> Any:
    # the HTTP clients need httpx (the ``agentproto[http]`` extra): imported on first
    # use, so that ``import agentproto.agui`` works without it
    if name not in _NEED_HTTPX:
        raise AttributeError(f"module 'agentproto.agui' has no attribute {name!r}")
    try:
        from agentproto.agui import _http_client
    except ModuleNotFoundError as exc:
        if exc.name != "httpx":
            raise
        raise ImportError(
            f"agentproto.agui.{name} needs httpx: pip install 'agentproto[http]'",
            name="httpx",
        ) from exc
    value = getattr(_http_client, name)
    globals()[name] = value
    return value
