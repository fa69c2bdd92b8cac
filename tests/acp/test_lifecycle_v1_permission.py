"""A v2 permission request through the v1 bridge: v1 has no `title` or `description`, only the
`toolCall` (whose title a v1 client shows) and `_meta`. What v1 can hold is carried; what it
cannot is reported, never dropped silently."""

from __future__ import annotations

import asyncio
from typing import Any

from agentproto._core.diagnostics import Diagnostic
from agentproto.acp import AcpClient, Agent, AgentRunner, AgentSession, MemoryPipe
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import ALLOW, Answers
from tests.acp.test_lifecycle_v1 import Tap


class Asks(Agent):
    """A v1-only agent asking three permissions: about a tool call (the same title, then
    another title and a description) and about nothing (title only, request _meta)."""

    protocol_versions = (1,)

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        tool = await session.tool_call("Edit main.py", kind="edit")
        await session.request_permission("Edit main.py", [ALLOW], tool_call=tool)
        await session.request_permission(
            "Overwrite?", [ALLOW], tool_call=tool, description="it has local changes"
        )
        await self.runner.connection.request(
            acp.RequestPermissionRequest(
                session_id=session.session_id,
                title="Go online?",
                options=[ALLOW],
                meta={"reason": "fetch"},
            )
        )
        await tool.finish("completed")
        return None


class Records(Answers):
    def __init__(self) -> None:
        super().__init__("yes")
        self.requests: list[acp.RequestPermissionRequest] = []

    async def on_permission(self, session: Any, request: Any) -> Any:
        self.requests.append(request)
        return await super().on_permission(session, request)


async def test_title_description_and_meta_through_v1() -> None:
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    agent_out = Tap(to_client)
    diagnostics: list[Diagnostic] = []
    runner = AgentRunner(Asks(), to_agent, agent_out, on_diagnostic=diagnostics.append)
    handlers = Records()
    client = AcpClient.connect(to_client, to_agent, handlers)
    serving = asyncio.create_task(runner.serve())
    async with client:
        await client.initialize()
        session = await client.new_session("/w")
        assert await client.prompt(session.session_id, "go") == "end_turn"
    await runner.close()
    await serving

    sent = [m["params"] for m in agent_out.sent if m.get("method") == "session/request_permission"]
    assert [set(params) for params in sent] == [
        {"sessionId", "toolCall", "options"},
        {"sessionId", "toolCall", "options"},
        {"sessionId", "toolCall", "options", "_meta"},
    ]
    # no tool call: the title is the placeholder toolCall's, which a v1 client shows
    assert sent[2]["toolCall"] == {"toolCallId": "", "title": "Go online?"}
    assert sent[2]["_meta"] == {"reason": "fetch"}
    # a title other than the tool call's, and the description, have no place in v1
    (lossy,) = [d for d in diagnostics if d.code == "v1.permission-lossy"]
    assert "'Overwrite?'" in lossy.message and "'it has local changes'" in lossy.message
    # the v2 client application reads v1's title back from the toolCall, and the _meta
    titles = [(r.title, r.meta) for r in handlers.requests]
    assert titles[2] == ("Go online?", {"reason": "fetch"})
