"""The runnable example agent and its bundled stream (issue 5 item 2)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import agui_scripted_agent as scripted_agent
import httpx
import pytest
from agui_scripted_agent import (
    BUNDLED_STREAM,
    DEFAULT_RUN_INPUT,
    app,
    scripted_events,
    scripted_sse,
    write_bundled_stream,
)

import agentproto.cli
from agentproto.agui import consume, schema
from agentproto.cli.agui import EXAMPLE, load_recording
from tests.agui.live_server import serve

DEFAULT_BODY: dict[str, Any] = {"threadId": "thread-1", "runId": "run-1", "messages": []}


def test_bundled_stream_is_what_the_agent_produces() -> None:
    """The bundled .sse file is byte for byte the scripted agent's output for the default
    input (regenerate it with ``--regenerate`` when the script changes)."""
    assert BUNDLED_STREAM.read_bytes() == scripted_sse()


def test_bundled_stream_is_the_clis_example() -> None:
    """BUNDLED_STREAM is the package data the CLI replays when no file is given (the same
    bytes in the installed package, wherever it is installed)."""
    assert (Path(agentproto.cli.__file__).parent / "data" / EXAMPLE).read_bytes() == (
        BUNDLED_STREAM.read_bytes()
    )
    assert load_recording(None).data == BUNDLED_STREAM.read_bytes()


def test_served_stream_is_the_bundled_stream() -> None:
    """Served over HTTP for the default input, the agent sends exactly the bundled bytes."""
    with serve(app) as url, httpx.Client(timeout=10) as client:
        response = client.post(url, json=DEFAULT_BODY)
    assert response.content == BUNDLED_STREAM.read_bytes()


def test_bundled_stream_is_accepted_without_diagnostics() -> None:
    """The Consumer accepts the bundled stream with no diagnostic and a successful run."""
    consumer = consume([BUNDLED_STREAM.read_bytes()], run_input=DEFAULT_BODY)
    assert consumer.diagnostics == []
    assert consumer.verifier.runs[-1].succeeded
    conversation = consumer.conversation
    assert [m.role for m in conversation.messages] == [
        "assistant",
        "tool",
        "activity",
        "assistant",
        "assistant",
    ]
    assert conversation.state_json() == {
        "query": "AG-UI protocol",
        "results": ["AG-UI overview", "AG-UI events"],
        "status": "done",
    }
    (activity,) = conversation.activities
    assert activity.activity_type == "search-progress"
    assert activity.content["completed"] == 2
    summary = conversation.message("msg-2")
    assert summary is not None and summary.subagent_run_id == "subagent-1"


def test_script_covers_the_required_events() -> None:
    """The script has text deltas, a tool call with result, state and activity snapshots
    with two deltas each, and a subagent with an attributed message."""
    types: list[str] = [e.type for e in scripted_events()]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    for kind, count in [
        ("TEXT_MESSAGE_CONTENT", 3),
        ("TOOL_CALL_ARGS", 2),
        ("TOOL_CALL_RESULT", 1),
        ("STATE_SNAPSHOT", 1),
        ("STATE_DELTA", 2),
        ("ACTIVITY_SNAPSHOT", 1),
        ("ACTIVITY_DELTA", 2),
        ("SUBAGENT_STARTED", 1),
        ("SUBAGENT_FINISHED", 1),
    ]:
        assert types.count(kind) >= count, kind
    attributed = [e for e in scripted_events() if getattr(e, "subagent_run_id", None)]
    assert {e.type for e in attributed} >= {"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"}


def test_events_follow_the_run_input() -> None:
    """The thread and run ids come from the run input; the rest is the same script."""
    other = schema.RunAgentInput(thread_id="t-x", run_id="r-x", messages=[])
    events = scripted_events(other)
    assert isinstance(events[0], schema.RunStartedEvent)
    assert (events[0].thread_id, events[0].run_id) == ("t-x", "r-x")
    assert len(events) == len(scripted_events(DEFAULT_RUN_INPUT))


def test_regenerate_writes_the_stream(tmp_path: Path) -> None:
    """``write_bundled_stream`` writes the default run's SSE bytes."""
    target = write_bundled_stream(tmp_path / "run.sse")
    assert target.read_bytes() == scripted_sse()


def test_main_without_uvicorn_explains(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without uvicorn the command exits 2 with a clear message."""
    real = importlib.import_module

    def fake_import(name: str, *args: Any) -> Any:
        if name == "uvicorn":
            raise ImportError("No module named 'uvicorn'")
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    assert scripted_agent.main(["--port", "1"]) == 2
    assert "needs uvicorn" in capsys.readouterr().err


def test_main_serves_with_uvicorn_on_localhost(monkeypatch: pytest.MonkeyPatch) -> None:
    """With uvicorn the command serves the agent on 127.0.0.1 at the given port."""
    calls: list[tuple[Any, dict[str, Any]]] = []

    class FakeUvicorn:
        @staticmethod
        def run(app: Any, **kwargs: Any) -> None:
            calls.append((app, kwargs))

    real = importlib.import_module
    monkeypatch.setattr(
        importlib,
        "import_module",
        lambda name, *a: FakeUvicorn if name == "uvicorn" else real(name, *a),
    )
    assert scripted_agent.main(["--port", "8123"]) == 0
    ((served, kwargs),) = calls
    assert callable(served)
    assert kwargs["host"] == "127.0.0.1" and kwargs["port"] == 8123
