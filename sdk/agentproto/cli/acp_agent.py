"""``agentproto acp serve-example``: a scripted ACP v2 agent (no model) on stdio.

Every prompt gets the same turn (the ids are fresh each time):

1. a plan ``main`` with three pending entries;
2. an agent message streamed in chunks;
3. an ``edit`` tool call on ``hello.py`` in the session's directory, with a
   permission request (allow once / reject once);
4. when allowed: the tool call in progress, a diff of the file, the call
   completed, the plan completed, a usage report; when not: the call failed and
   a message saying so;
5. the stop reason ``end_turn``.

A prompt whose text is ``slow`` waits a minute after the permission (for
cancelling); cancelling ends the turn with ``cancelled``.

Run it with ``agentproto acp serve-example`` (``examples/acp_client.py`` drives it).
It is written with the public API only, like the examples.
"""

from __future__ import annotations

import asyncio
import posixpath
import uuid

from agentproto.acp import Agent, AgentSession, run_agent
from agentproto.acp import schema as acp

__all__ = ["ScriptedAgent", "main"]

ALLOW = acp.PermissionOption(option_id="allow", name="Allow once", kind="allow_once")
REJECT = acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once")
STEPS = ("Read hello.py", "Add a greeting", "Report")
PATCH = "--- a/hello.py\n+++ b/hello.py\n@@ -1 +1,2 @@\n print('hi')\n+print('hello')\n"


def _plan(status: str) -> list[acp.PlanEntry]:
    return [acp.PlanEntry(content=step, priority="medium", status=status) for step in STEPS]


def _text(request: acp.PromptRequest) -> str:
    return next((b.text for b in request.prompt if isinstance(b, acp.TextContentBlock)), "")


class ScriptedAgent(Agent):
    """The scripted agent (see the module documentation)."""

    info = acp.Implementation(name="agentproto-scripted-agent", version="1")

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        """Run the script once."""
        await session.plan(_plan("pending"))
        message_id = f"msg-{uuid.uuid4().hex}"
        for word in ("I", " will", " add", " a", " greeting."):
            await session.message_chunk(word, message_id=message_id)
        path = posixpath.join(session.cwd, "hello.py")
        tool = await session.tool_call(
            "Edit hello.py", kind="edit", locations=[acp.ToolCallLocation(path=path)]
        )
        decision = await session.request_permission(
            "Allow editing hello.py?", [ALLOW, REJECT], tool_call=tool
        )
        if not decision.allowed:
            await tool.finish("failed")
            await session.message("Not editing hello.py.")
            return "end_turn"
        await tool.progress()
        if _text(request) == "slow":
            await asyncio.sleep(60)
        change = acp.ModifyDiffChange(path=path)
        await tool.diff([change], patch=acp.DiffPatch(format="git_patch", text=PATCH))
        await tool.finish()
        await session.plan(_plan("completed"))
        await session.usage(120, 200_000)
        return "end_turn"


def main() -> None:
    """Serve the scripted agent on stdio until the client goes away."""
    run_agent(ScriptedAgent())
