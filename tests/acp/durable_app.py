"""An ACP agent whose sessions outlive its process, served by ``acp_app`` under uvicorn: the
agent server the restart faults of ``test_remote_restart.py`` kill and start again.

One SQLite file (``ACP_STORE``) holds both what a deployment keeps: the transport's
streams (``SQLiteEventLog``) and the agent's sessions (``SQLiteThreadStore``). The agent
is the ``Durable`` one of the ACP agents guide, run from the guide's own block: it keeps
every update before sending it (``record_update``) and loads a session from what it kept
on ``session/resume`` in a new process, so a client that lost its connection to a dead
process rebuilds the session from what the agent had done.

The agent's turn: a plan, a tool call, a permission request about it, the tool call's diff
and completion, a message in three chunks. ``ACP_DIE`` makes the process kill itself
(``SIGKILL``: nothing is flushed, nothing ends cleanly): ``update:N`` right after sending
its ``N``-th update (counted from 1 over the process), ``asked`` while its permission
request waits for the client's answer.
"""

from __future__ import annotations

import asyncio
import os
import signal

from agentproto.acp import AgentSession, acp_app
from agentproto.acp import schema as acp
from agentproto.stores import SQLiteEventLog, SQLiteThreadStore
from tests.docblocks import run_doc_block

GUIDE, HEADING = "docs/guides/acp-agents.md", "Sessions that outlive the process"
STORE = os.environ.get("ACP_STORE", ":memory:")
DIE = os.environ.get("ACP_DIE", "")
PLAN = ["read the file", "change it"]
ANSWER = ["The file ", "is ", "changed."]


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


# the agent of the guide (docs/guides/acp-agents.md), as written there
Durable = run_doc_block(GUIDE, HEADING)["Durable"]


class DurableAgent(Durable):  # type: ignore[misc, valid-type]
    """The guide's ``Durable`` agent (it keeps every update it sends and loads a session
    from what it kept on ``session/resume``) with a turn worth cutting, dying as ``DIE``
    says."""

    def __init__(self, store: SQLiteThreadStore) -> None:
        super().__init__(store)
        self.sent = 0

    async def record_update(self, session: AgentSession, update: acp.SessionUpdate) -> None:
        await super().record_update(session, update)
        self.sent += 1
        if f"update:{self.sent}" == DIE:  # right after sending it
            asyncio.get_running_loop().call_soon(die)

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        turn = getattr(request.prompt[0], "text", "")
        entries = [
            acp.PlanEntry(content=step, priority="medium", status="pending") for step in PLAN
        ]
        await session.plan(entries)
        call = await session.tool_call("Edit notes.txt", kind="edit", tool_call_id=f"edit-{turn}")
        if DIE == "asked":
            asyncio.get_running_loop().call_later(0.3, die)
        allow = acp.PermissionOption(option_id="allow", name="Allow", kind="allow_once")
        decision = await session.request_permission("Edit notes.txt?", [allow], tool_call=call)
        if not decision.allowed:
            await call.finish("failed")
            return "end_turn"
        await call.diff([acp.ModifyDiffChange(path="/work/notes.txt")])
        await call.finish("completed")
        for chunk in ANSWER:
            await session.message_chunk(chunk, message_id=f"answer-{turn}")
        return "end_turn"


app = acp_app(
    lambda: DurableAgent(SQLiteThreadStore(STORE)), log=SQLiteEventLog(STORE), keepalive=0.5
)
