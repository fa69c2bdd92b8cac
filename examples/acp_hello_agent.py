"""A small ACP v2 agent on stdio: the code a user copies to start (``examples/demo.py``
runs it as a subprocess).

Every prompt gets a plan, a streamed answer, and an ``edit`` tool call that asks the
client for permission first. What the agent sees of the client (the prompt, the
permission answer) is written to stderr, so a demo can show both sides::

    python acp_hello_agent.py          # speaks ACP on stdin/stdout
"""

from __future__ import annotations

import sys

from agentproto.acp import Agent, AgentSession, run_agent
from agentproto.acp import schema as acp

STEPS = ("Read hello.py", "Add a greeting")
ALLOW = acp.PermissionOption(option_id="allow", name="Allow once", kind="allow_once")
REJECT = acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once")


def plan(status: str) -> list[acp.PlanEntry]:
    """The plan's entries, all with ``status``."""
    return [acp.PlanEntry(content=step, priority="medium", status=status) for step in STEPS]


def saw(what: str) -> None:
    """Report what the agent received, on stderr (stdout carries the protocol)."""
    print(f"agent saw: {what}", file=sys.stderr, flush=True)


class ExampleAgent(Agent):
    """Plans, answers and edits ``hello.py`` once the client allows it."""

    info = acp.Implementation(name="agentproto-example-agent", version="1")

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        """One turn: plan, message, a permitted tool call."""
        text = " ".join(b.text for b in request.prompt if isinstance(b, acp.TextContentBlock))
        saw(f"prompt {text!r} in session {session.session_id}")
        await session.plan(plan("pending"))
        await session.message("I will add a greeting to hello.py.")
        tool = await session.tool_call("Edit hello.py", kind="edit")
        decision = await session.request_permission(
            "Edit hello.py?", [ALLOW, REJECT], tool_call=tool
        )
        saw(f"permission answer: {'allowed' if decision.allowed else 'refused'}")
        if not decision.allowed:
            await tool.finish("failed")
            return "end_turn"
        await tool.progress()
        await tool.finish()
        await session.plan(plan("completed"))
        return "end_turn"


if __name__ == "__main__":
    run_agent(ExampleAgent())
