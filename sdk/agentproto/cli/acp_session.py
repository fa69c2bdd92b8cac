"""``agentproto acp serve-example`` and ``agentproto acp run -- CMD ...``: live ACP sessions.

``serve-example`` runs the scripted example agent
(:mod:`agentproto.cli.acp_agent`) on this process's stdio, for
an editor or another client to drive. ``run`` starts an agent command, drives
it through one prompt with an :class:`~agentproto.acp.AcpClient` (initialize,
a new session in the current directory, the prompt; permission requests are
approved with their first ``allow_…`` option, or declined with ``--deny``) and
prints the stop reason and the session's final state: a readable summary, or
with ``--json`` one object ``{"stopReason", "session": {"entities": ...},
"diagnostics": [...]}``. Exit status: 0 when the turn ended, 1 when the agent
failed the protocol (an error answer, a closed connection, a timeout), 2 on a
usage error or when the command cannot be started.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from agentproto._core.errors import AgentProtoError
from agentproto._core.json.codec import dumps
from agentproto.acp import ClientHandlers, ClientSession
from agentproto.acp import schema as acp
from agentproto.cli._text import preview, write_utf8
from agentproto.cli.acp import entity_lines

__all__ = ["Approver", "run_command", "run_serve_example"]

EXIT_OK = 0
EXIT_PROTOCOL = 1
EXIT_USAGE = 2


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


def run_serve_example() -> int:
    """Run ``agentproto acp serve-example`` (until the client closes stdin)."""
    from agentproto.cli.acp_agent import main

    main()
    return EXIT_OK


async def _drive(
    command: Sequence[str], prompt: str, approve: bool, timeout: float
) -> tuple[str | None, ClientSession, list[Any]]:
    from agentproto.acp import AcpClient

    client = await AcpClient.spawn(command, Approver(approve), request_timeout=timeout)
    async with client:
        await client.initialize()
        session = await client.new_session(os.getcwd())
        stop_reason = await client.prompt(session.session_id, prompt, timeout=timeout)
    return stop_reason, session, list(client.diagnostics)


def run_command(
    command: Sequence[str],
    *,
    prompt: str = "hello",
    approve: bool = True,
    as_json: bool = False,
    timeout: float = 60.0,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run ``agentproto acp run [--prompt TEXT] [--deny] [--json] -- CMD ...``.

    Returns:
        The exit status: 0, 1 (the agent failed the protocol) or 2 (usage error).
    """
    out = sys.stdout if stdout is None else stdout
    err = sys.stderr if stderr is None else stderr
    if not command:
        err.write("agentproto acp run: give the agent command after --\n")
        return EXIT_USAGE
    try:
        stop_reason, session, diagnostics = asyncio.run(_drive(command, prompt, approve, timeout))
    except (AgentProtoError, TimeoutError) as error:
        # first: ConnectionClosedError and the timeouts are OSErrors too, and mean the agent
        # failed, not that it could not start
        err.write(f"agentproto acp run: {preview(str(error) or type(error).__name__, 2000)}\n")
        return EXIT_PROTOCOL
    except OSError as error:
        err.write(f"agentproto acp run: cannot start {command[0]!r}: {error.strerror or error}\n")
        return EXIT_USAGE
    if as_json:
        document = {
            "stopReason": stop_reason,
            "session": session.state.to_json(),
            "diagnostics": [{"code": d.code, "message": d.message} for d in diagnostics],
        }
        write_utf8(out, dumps(document) + b"\n")
        return EXIT_OK
    lines = [
        f"stop reason: {preview(stop_reason, 80)}",
        f"session {preview(session.session_id, 80)}:",
    ]
    lines += entity_lines(session.state)
    lines += [f"diagnostic: {preview(str(d), 300)}" for d in diagnostics]
    write_utf8(out, ("\n".join(lines) + "\n").encode("utf-8"))
    return EXIT_OK
