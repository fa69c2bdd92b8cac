"""A deterministic, scripted AG-UI agent: the example stream of the demo, the tests and interop.

One run, always the same events (only the thread and run ids follow the run input):

1. RUN_STARTED;
2. an assistant text message streamed in three deltas;
3. a ``search`` tool call whose arguments arrive in two pieces, then its result;
4. a STATE_SNAPSHOT and two STATE_DELTAs (computed by ``state_update``);
5. a ``search-progress`` ACTIVITY_SNAPSHOT and two ACTIVITY_DELTAs (``activity_update``);
6. a ``summarizer`` subagent: SUBAGENT_STARTED, a text message attributed to it,
   SUBAGENT_FINISHED;
7. a closing assistant text message, and RUN_FINISHED.

Use it as:

* :func:`scripted_events` — the typed events, for tests and tools;
* :func:`scripted_sse` — their SSE bytes; :data:`BUNDLED_STREAM`, the example recording
  the ``agentproto`` CLI bundles, is a copy of them for the default run input (a test
  keeps the two byte-identical; ``--regenerate`` rewrites it);
* :data:`app` — an ASGI application (:func:`~agentproto.agui.agent_app`) that
  answers every POSTed run input with the script;
* ``python examples/agui_scripted_agent.py [--port P] [--delay S]`` — serves
  :data:`app` with uvicorn on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final

from agentproto.agui import Event, RunProducer, agent_app, encode_event_sse
from agentproto.agui.asgi import ASGIApp
from agentproto.agui.schema import RunAgentInput

__all__ = [
    "BUNDLED_STREAM",
    "DEFAULT_RUN_INPUT",
    "app",
    "main",
    "make_app",
    "scripted_events",
    "scripted_sse",
    "write_bundled_stream",
]

BUNDLED_STREAM: Final = (
    Path(__file__).resolve().parents[1] / "sdk" / "agentproto" / "cli" / "data" / "agui_run.sse"
)
"""The SSE stream :func:`scripted_sse` gives for :data:`DEFAULT_RUN_INPUT`, as the CLI bundles
it (package data of ``agentproto.cli``, in the source tree)."""

DEFAULT_THREAD_ID: Final = "thread-1"
DEFAULT_RUN_ID: Final = "run-1"


def default_run_input() -> RunAgentInput:
    """The run input of the bundled stream: thread ``thread-1``, run ``run-1``, no messages."""
    return RunAgentInput(thread_id=DEFAULT_THREAD_ID, run_id=DEFAULT_RUN_ID, messages=[])


DEFAULT_RUN_INPUT: Final = default_run_input()

_QUERY: Final = "AG-UI protocol"
_RESULTS: Final = [
    {"title": "AG-UI overview", "url": "https://docs.ag-ui.com/introduction"},
    {"title": "AG-UI events", "url": "https://docs.ag-ui.com/concepts/events"},
]


def _script(p: RunProducer) -> Iterator[None]:
    """Drive ``p`` through the scripted run; yields where a live agent would wait."""
    p.run_started()
    yield
    with p.text_message("msg-1") as intro:
        for piece in ("Let me ", "search for ", "that."):
            intro.content(piece)
            yield
    with p.tool_call("search", tool_call_id="call-1", parent_message_id="msg-1") as call:
        call.args('{"query": ')
        yield
        call.args(f'"{_QUERY}"}}')
    yield
    call.result({"results": [r["title"] for r in _RESULTS]}, message_id="tool-result-1")
    yield

    state = {"query": _QUERY, "results": [], "status": "searching"}
    p.state_snapshot(state)
    yield
    state = {**state, "results": [r["title"] for r in _RESULTS]}
    p.state_update(state)
    yield
    state = {**state, "status": "done"}
    p.state_update(state)
    yield

    progress = {"stage": "querying", "completed": 0, "total": len(_RESULTS), "sources": []}
    p.activity_snapshot("activity-1", "search-progress", progress)
    yield
    for done in range(1, len(_RESULTS) + 1):
        progress = {
            **progress,
            "stage": "reading" if done < len(_RESULTS) else "done",
            "completed": done,
            "sources": [r["url"] for r in _RESULTS[:done]],
        }
        p.activity_update("activity-1", progress)
        yield

    with p.subagent(
        "summarizer",
        subagent_run_id="subagent-1",
        description="Summarises search results",
        parent_tool_call_id="call-1",
    ) as sub:
        yield
        with p.text_message("msg-2", subagent_run_id=sub.subagent_run_id) as summary:
            for piece in ("Both sources ", "describe AG-UI as ", "an event protocol."):
                summary.content(piece)
                yield
    yield
    p.text(
        ["AG-UI is an event-based protocol ", "connecting agents to user interfaces."],
        message_id="msg-3",
    )
    yield
    p.run_finished()


def scripted_events(run_input: RunAgentInput | None = None) -> list[Event]:
    """The scripted run's events for ``run_input`` (default :data:`DEFAULT_RUN_INPUT`)."""
    producer = RunProducer(run_input if run_input is not None else default_run_input())
    for _ in _script(producer):
        pass
    producer.close()
    return producer.drain()


def scripted_sse(run_input: RunAgentInput | None = None) -> bytes:
    """The scripted run as SSE bytes (what :data:`app` sends for ``run_input``)."""
    return b"".join(encode_event_sse(event) for event in scripted_events(run_input))


def write_bundled_stream(path: Path = BUNDLED_STREAM) -> Path:
    """Write :func:`scripted_sse` for the default input to ``path`` (the bundled stream)."""
    path.write_bytes(scripted_sse())
    return path


def make_app(*, delay: float = 0.0) -> ASGIApp:
    """The scripted agent as an ASGI app, pausing ``delay`` seconds between steps."""

    async def handler(run_input: RunAgentInput, producer: RunProducer) -> None:
        for _ in _script(producer):
            await asyncio.sleep(delay)

    return agent_app(handler)


app: Final = make_app()
"""The scripted agent (no pauses), for ``uvicorn --app-dir examples agui_scripted_agent:app``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the scripted agent with uvicorn on 127.0.0.1 (or rewrite the bundled stream)."""
    parser = argparse.ArgumentParser(
        prog="python examples/agui_scripted_agent.py",
        description="Serve the scripted AG-UI example agent (POST a RunAgentInput to any path).",
    )
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument(
        "--delay", type=float, default=0.0, help="seconds between steps (default 0)"
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help=f"rewrite the bundled stream ({BUNDLED_STREAM.name}) and exit",
    )
    args = parser.parse_args(argv)
    if args.regenerate:
        print(f"wrote {write_bundled_stream()}")
        return 0
    try:
        uvicorn = importlib.import_module("uvicorn")
    except ImportError:
        print(
            "error: serving the example agent needs uvicorn (pip install uvicorn)",
            file=sys.stderr,
        )
        return 2
    uvicorn.run(make_app(delay=args.delay), host="127.0.0.1", port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
