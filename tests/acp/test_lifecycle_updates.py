"""The agent side refuses what the spec forbids before sending: the update duties of
SessionUpdates and the foreground transitions of the prompt turn."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto._core.errors import UsageError
from agentproto.acp import Foreground, SessionUpdates
from agentproto.acp import schema as acp


def producer() -> tuple[SessionUpdates, list[Any]]:
    sent: list[Any] = []

    async def send(update: Any) -> None:
        sent.append(update)

    return SessionUpdates("s", send), sent


def chunk(call: str) -> acp.ToolCallContentChunkSessionUpdate:
    text = acp.ContentToolCallContent(content=acp.TextContentBlock(text="x"))
    return acp.ToolCallContentChunkSessionUpdate(tool_call_id=call, content=text)


@pytest.mark.parametrize(
    ("update", "code"),
    [
        (chunk("unknown"), "updates.unknown-entity"),
        (
            acp.TerminalOutputChunkSessionUpdate(terminal_id="t", data="eA=="),
            "updates.unknown-entity",
        ),
        (acp.ToolCallUpdateSessionUpdate(tool_call_id="new", meta={}), "updates.empty-meta"),
        (Foreground().begin(), "updates.by-hand-state"),
        ("not an update", "updates.not-an-update"),
    ],
)
async def test_refused_before_sending(update: Any, code: str) -> None:
    """Each forbidden update raises UsageError with its code and nothing is sent."""
    updates, sent = producer()
    with pytest.raises(UsageError) as caught:
        await updates.emit(update)
    assert caught.value.code == code and sent == [] and updates.state.keys() == []


async def test_empty_meta_is_allowed_where_metadata_exists_and_helpers_send() -> None:
    """``_meta: {}`` on an entity that holds metadata changes nothing and is sent; the
    helpers build the updates the client folds to the same state."""
    updates, sent = producer()
    call = await updates.tool_call("Run", kind="execute", meta={"k": 1})
    await call.update(meta={})
    terminal = await call.terminal("ls")
    await terminal.output(b"a\n")
    await terminal.exit(0)
    await call.finish()
    assert updates.state.tool_calls[call.tool_call_id].meta == {"k": 1}
    assert updates.state.terminals[terminal.terminal_id].text == "a\n"
    assert len(sent) == 7
    with pytest.raises(UsageError):
        await updates.tool_call("again", tool_call_id=call.tool_call_id)
    updates.close()
    with pytest.raises(UsageError) as caught:
        await updates.message("late")
    assert caught.value.code == "updates.closed"


async def test_resync_resends_the_current_state() -> None:
    """resync() resends an entity so a client holding stale metadata ends up holding the
    current one (stale keys nulled), and it leaves the producer's state as it was."""
    updates, sent = producer()
    call = await updates.tool_call("Run", meta={"old": 1})
    await call.update(meta={"old": None, "new": 2})
    before = updates.state.to_json()
    sent.clear()
    await updates.resync(f"tool_call:{call.tool_call_id}", known={"old": 1})
    (resent,) = sent
    assert resent.meta == {"new": 2, "old": None} and resent.title == "Run"
    assert updates.state.to_json() == before
    with pytest.raises(UsageError):
        await updates.resync("tool_call:none")


def test_foreground_transitions() -> None:
    """begin twice is turn.busy; ending idle work is turn.not-active; after a cancel only
    'cancelled' ends the work; block/resume report requires_action/running."""
    work = Foreground()
    with pytest.raises(UsageError, match="idle"):
        work.end("end_turn")
    assert work.begin().extra == {"state": "running"}
    with pytest.raises(UsageError) as caught:
        work.begin()
    assert caught.value.code == "turn.busy"
    assert work.block().extra == {"state": "requires_action"}
    assert work.resume().extra == {"state": "running"}
    assert work.cancel() and work.cancel_requested
    with pytest.raises(UsageError) as caught:
        work.end("end_turn")
    assert caught.value.code == "turn.cancelled" and work.active
    assert work.end("cancelled").extra == {"state": "idle", "stopReason": "cancelled"}
    assert not work.cancel() and work.snapshot().extra == {
        "state": "idle",
        "stopReason": "cancelled",
    }
