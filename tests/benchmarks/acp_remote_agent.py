"""The agent of the ACP transport figures: a prompt ``"N"`` is answered with ``N``
``agent_message_chunk`` updates of one message, then ``end_turn``.

``app`` serves it over HTTP and WebSocket (``uvicorn tests.benchmarks.acp_remote_agent:app``);
``python -m tests.benchmarks.acp_remote_agent`` serves it on stdio.
"""

from __future__ import annotations

from agentproto.acp import Agent, AgentSession, acp_app, run_agent
from agentproto.acp import schema as acp


class ChunkAgent(Agent):
    """Sends as many chunks as the prompt's number says."""

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        block = request.prompt[0]
        count = int(block.text) if isinstance(block, acp.TextContentBlock) else 1
        for index in range(count):
            await session.message_chunk(f"chunk {index} ", message_id="answer")
        return "end_turn"


app = acp_app(ChunkAgent)

if __name__ == "__main__":
    run_agent(ChunkAgent())
