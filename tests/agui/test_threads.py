"""Threads that survive a reload (issue 26, item 3): ``agent_app(threads=...)`` adds every
run, once over, to its thread in the store, ``GET ?threadId=T`` answers the thread as a
History, and ``HttpAgent.load_thread`` restores it on a client that kept only the id."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentproto import UsageError
from agentproto.agui import (
    AsyncHttpAgent,
    History,
    HttpAgent,
    HttpStatusError,
    RunProducer,
    agent_app,
)
from agentproto.stores import (
    MemoryEventLog,
    MemoryThreadStore,
    RedisThreadStore,
    SQLiteEventLog,
    SQLiteThreadStore,
    ThreadStore,
)
from tests.agui.live_server import serve
from tests.docblocks import doc_block
from tests.needs import redis_server

SEEN: list[list[str]] = []  # the message ids of each run input the agent got


async def _agent(run_input: Any, producer: RunProducer) -> None:
    SEEN.append([message.id for message in run_input.messages])
    producer.run_started()
    turn = len(run_input.messages)
    producer.activity_snapshot(f"plan-{turn}", "plan", {"turn": turn})
    producer.text([f"answer {turn}"], message_id=f"answer-{turn}")
    producer.state_update({"turns": turn})
    await asyncio.sleep(0)
    producer.run_finished()


def _threads(kind: str, tmp_path: Path) -> ThreadStore:
    if kind == "memory":
        return MemoryThreadStore()
    if kind == "sqlite":
        return SQLiteThreadStore(tmp_path / "threads.db")
    return RedisThreadStore(redis_server(), prefix=f"t{uuid.uuid4().hex}")


@pytest.mark.parametrize("kind", ["memory", "sqlite", "redis"])
def test_a_reloaded_client_restores_the_thread_and_goes_on(kind: str, tmp_path: Path) -> None:
    """Two runs, then a new client knowing only the thread id: ``load_thread`` gives it the
    first client's conversation (activities where they were, state), runs and nothing
    open, and its next run sends the whole conversation, as the first client would."""
    app = agent_app(_agent, log=MemoryEventLog(), threads=_threads(kind, tmp_path))
    with serve(app) as url:
        with HttpAgent(url, thread_id="t") as first:
            first.run_to_end("hello", run_id="r1")
            first.run_to_end("and again", run_id="r2")
            before = first.conversation.to_json()
            sent = [
                m.id for m in first.conversation.copy_messages(skip_roles=frozenset({"activity"}))
            ]
        with HttpAgent(url, thread_id="t") as reloaded:
            history = reloaded.load_thread()
            assert [run.run_id for run in history.runs] == ["r1", "r2"]
            assert reloaded.conversation.to_json() == before
            assert [run.run_id for run in reloaded.runs] == ["r1", "r2"]
            assert not len(reloaded.interrupts)
            SEEN.clear()
            reloaded.run_to_end("third", run_id="r3")
            assert SEEN[0][: len(sent)] == sent
            assert reloaded.conversation.state == {"turns": 5}


def test_the_thread_survives_a_restart_on_sqlite(tmp_path: Path) -> None:
    """A server restarted on the same SQLite files answers the thread its predecessor
    recorded; the async client restores it too."""
    path = tmp_path / "agent.db"

    def app() -> Any:
        return agent_app(_agent, log=SQLiteEventLog(path), threads=SQLiteThreadStore(path))

    with serve(app()) as url, HttpAgent(url, thread_id="t") as agent:
        agent.run_to_end("hello", run_id="r1")
        before = agent.conversation.to_json()

    async def reload(url: str) -> dict[str, Any]:
        async with AsyncHttpAgent(url, thread_id="t") as reloaded:
            await reloaded.load_thread()
            return reloaded.conversation.to_json()

    with serve(app()) as url:
        assert asyncio.run(reload(url)) == before


def test_the_thread_document_is_a_history_whose_runs_carry_their_input() -> None:
    """``GET ?threadId=`` is one JSON array of wire events; each ``RUN_STARTED`` carries
    the input the run was given (the serialization page's ``input``)."""
    app = agent_app(_agent, log=MemoryEventLog(), threads=MemoryThreadStore())
    with serve(app) as url:
        with HttpAgent(url, thread_id="t") as agent:
            agent.run_to_end("hello", run_id="r1")
        response = httpx.get(url, params={"threadId": "t"})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    history = History.from_json(response.json())
    started = history.runs[0].started
    assert started.input is not None
    assert [message.content for message in started.input.messages] == ["hello"]
    with HttpAgent(url, thread_id="another") as other:
        with pytest.raises(UsageError) as caught:
            other.restore(history)
        assert caught.value.code == "http.thread-mismatch"
        assert other.conversation.messages == ()


def test_unknown_threads_and_misuse_are_refused() -> None:
    """A thread with no recorded run is 404 ``unknown-thread`` (``HttpStatusError`` from
    ``load_thread``, the client's thread untouched); a thread store without an event log
    is a UsageError."""
    app = agent_app(_agent, log=MemoryEventLog(), threads=MemoryThreadStore())
    with serve(app) as url, HttpAgent(url, thread_id="nobody") as agent:
        with pytest.raises(HttpStatusError) as caught:
            agent.load_thread()
        assert caught.value.status == 404
        assert caught.value.body["error"] == "unknown-thread"
        assert agent.conversation.messages == ()
    with pytest.raises(UsageError) as misuse:
        agent_app(_agent, threads=MemoryThreadStore())
    assert misuse.value.code == "serve.threads-without-log"


def test_the_readme_block_restores_a_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README.md, "Threads that survive a reload": its app (files in a scratch folder)
    records a run, and its client, knowing only the thread id, gets the run back."""
    monkeypatch.chdir(tmp_path)
    code = doc_block("README.md", "Threads that survive a reload")
    server_part, _, client_part = code.partition("agent = HttpAgent")
    namespace: dict[str, Any] = {"__name__": "__doc_block__"}
    exec(server_part, namespace)
    with serve(namespace["app"]) as url:
        with HttpAgent(url, thread_id="thread-1") as earlier:
            earlier.run_to_end("hello")
        client_code = "agent = HttpAgent" + client_part.replace("http://localhost:8000/agent", url)
        exec(client_code, namespace)
        agent = namespace["agent"]
        try:
            assert agent.conversation.to_json() == earlier.conversation.to_json()
            assert [m.content for m in agent.conversation.messages] == [
                "hello",
                "1 messages so far.",
            ]
        finally:
            agent.close()
