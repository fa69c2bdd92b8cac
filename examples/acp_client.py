"""An example ACP v2 client: drive an agent command through one prompt.

``python examples/acp_client.py [-- CMD ...]`` starts the agent (by default the
scripted example agent, ``agentproto acp serve-example``), initializes, opens a
session in the current directory, sends one prompt, approves every permission
request with its first ``allow`` option, and prints the stop reason and the
session's final state as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence

from agentproto.acp import AcpClient, ClientHandlers, ClientSession
from agentproto.acp import schema as acp

__all__ = ["Approver", "drive", "main"]

EXAMPLE_AGENT = (sys.executable, "-m", "agentproto", "acp", "serve-example")


class Approver(ClientHandlers):
    """Approves each permission request with its first ``allow_…`` option (or declines)."""

    def __init__(self, approve: bool = True) -> None:
        self.approve = approve

    async def on_permission(
        self, session: ClientSession, request: acp.RequestPermissionRequest
    ) -> str | None:
        """The first offered ``allow_…`` option, or ``None`` (cancelled)."""
        if not self.approve:
            return None
        allow = [o.option_id for o in request.options if o.kind.startswith("allow")]
        return allow[0] if allow else None


async def drive(
    command: Sequence[str],
    prompt: str = "Add a greeting to hello.py",
    *,
    approve: bool = True,
    cwd: str | None = None,
) -> tuple[str | None, ClientSession]:
    """Run one prompt turn against ``command``; the stop reason and the session."""
    client = await AcpClient.spawn(command, Approver(approve), request_timeout=30)
    async with client:
        await client.initialize()
        session = await client.new_session(cwd or os.getcwd())
        stop_reason = await client.prompt(session.session_id, prompt, timeout=60)
    return stop_reason, session


def main(argv: Sequence[str] | None = None) -> int:
    """Run the example; print ``{"stopReason": ..., "session": {...}}``."""
    args = list(sys.argv[1:] if argv is None else argv)
    command = args[args.index("--") + 1 :] if "--" in args else list(EXAMPLE_AGENT)
    stop_reason, session = asyncio.run(drive(command))
    print(json.dumps({"stopReason": stop_reason, "session": session.state.to_json()}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
