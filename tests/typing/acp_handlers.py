"""What mypy accepts and refuses when handlers are registered on an ACP connection.

Checked by ``nox -s typecheck`` (this folder is in mypy's ``files``), never run.
A refused line carries ``# type: ignore[...]``: mypy's ``warn_unused_ignores``
(part of ``strict``) fails the check when the line stops being refused.
"""

from __future__ import annotations

from agentproto.acp import schema as acp
from agentproto.acp.connection import Connection


async def on_prompt(params: acp.PromptRequest) -> acp.PromptResponse:
    return acp.PromptResponse(message_id="m")


async def on_config(
    params: acp.SetSessionConfigOptionRequest,
) -> acp.SetSessionConfigOptionResponse:
    return acp.SetSessionConfigOptionResponse(config_options=[])


async def on_id_config(
    params: acp.IdSetSessionConfigOptionRequest,
) -> acp.SetSessionConfigOptionResponse:
    return acp.SetSessionConfigOptionResponse(config_options=[])


async def on_anything(params: object) -> None:
    return None


def register(connection: Connection) -> None:
    """Accepted: a params class, a union alias of params classes, a method name."""
    connection.handle(acp.PromptRequest, on_prompt)
    connection.handle(acp.SetSessionConfigOptionRequest, on_config)
    connection.handle(acp.SetSessionConfigOptionRequest, on_anything)
    connection.handle("session/set_config_option", on_config)


def refused(connection: Connection) -> None:
    """Refused: a handler that takes other params than the target's."""
    connection.handle(acp.PromptRequest, on_config)  # type: ignore[arg-type]
    # the union's handler must take every member, not one of them
    connection.handle(acp.SetSessionConfigOptionRequest, on_id_config)  # type: ignore[call-overload]
