"""A tiny ACP agent over stdio, for the subprocess tests.

``session/new`` answers at once; ``session/prompt`` first asks the client for
permission (a request in the other direction), then answers; a prompt whose text
is ``"hang"`` never answers.
"""

from __future__ import annotations

import asyncio

from agentproto.acp._generated_v2 import (
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
)
from agentproto.acp._io.transports import stdio_streams
from agentproto.acp.connection import AgentSideConnection


async def main() -> None:
    conn = AgentSideConnection(*await stdio_streams())

    async def new_session(params: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="s-" + params.cwd)

    async def prompt(params: PromptRequest) -> PromptResponse:
        if getattr(params.prompt[0], "text", "") == "hang":
            await asyncio.Event().wait()
        await conn.request(
            RequestPermissionRequest(
                session_id=params.session_id,
                title="go?",
                options=[PermissionOption(option_id="y", name="Yes", kind="allow_once")],
            )
        )
        return PromptResponse(message_id="m1")

    conn.handle(NewSessionRequest, new_session)
    conn.handle(PromptRequest, prompt)
    async with conn:
        await conn.wait_closed()


if __name__ == "__main__":
    asyncio.run(main())
