"""The client's calls of the unstable ACP v2 methods, behind an explicit opt-in.

``AcpClient(..., unstable=True)`` enables them; otherwise each call raises
:class:`~agentproto.UsageError` (``client.unstable``) before anything is sent.
They may change or disappear with the next schema.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from agentproto._core.errors import UsageError
from agentproto.acp import _generated_v2 as v2

__all__ = ["UnstableCalls"]


class UnstableCalls:
    """Typed calls of the unstable agent methods (``client.unstable.fork_session(...)``).

    Args:
        call: sends a typed request and returns its typed result.
        enabled: whether the client opted in.
    """

    def __init__(self, call: Callable[..., Awaitable[Any]], *, enabled: bool) -> None:
        self._call = call
        self.enabled = enabled

    async def _send(self, params: Any) -> Any:
        if not self.enabled:
            raise UsageError(
                "client.unstable",
                f"{type(params).__name__} is unstable: create the client with unstable=True",
            )
        return await self._call(params)

    async def auth_status(self) -> v2.AuthStatusResponse:
        """``auth/status``."""
        result: v2.AuthStatusResponse = await self._send(v2.AuthStatusRequest())
        return result

    async def fork_session(
        self, session_id: str, cwd: str, **fields: Any
    ) -> v2.ForkSessionResponse:
        """``session/fork``."""
        result: v2.ForkSessionResponse = await self._send(
            v2.ForkSessionRequest(session_id=session_id, cwd=cwd, **fields)
        )
        return result

    async def session_status(self, session_id: str) -> v2.SessionStatusResponse:
        """``session/status``."""
        result: v2.SessionStatusResponse = await self._send(
            v2.SessionStatusRequest(session_id=session_id)
        )
        return result

    async def archive_session(self, session_id: str) -> v2.ArchiveSessionResponse:
        """``session/archive``."""
        result: v2.ArchiveSessionResponse = await self._send(
            v2.ArchiveSessionRequest(session_id=session_id)
        )
        return result

    async def unarchive_session(self, session_id: str) -> v2.UnarchiveSessionResponse:
        """``session/unarchive``."""
        result: v2.UnarchiveSessionResponse = await self._send(
            v2.UnarchiveSessionRequest(session_id=session_id)
        )
        return result

    async def set_session_title(self, session_id: str, title: str) -> v2.SetSessionTitleResponse:
        """``session/set_title``."""
        result: v2.SetSessionTitleResponse = await self._send(
            v2.SetSessionTitleRequest(session_id=session_id, title=title)
        )
        return result

    async def list_providers(self) -> v2.ListProvidersResponse:
        """``providers/list``."""
        result: v2.ListProvidersResponse = await self._send(v2.ListProvidersRequest())
        return result

    async def set_provider(self, request: v2.SetProviderRequest) -> v2.SetProviderResponse:
        """``providers/set``."""
        result: v2.SetProviderResponse = await self._send(request)
        return result

    async def disable_provider(self, provider_id: str) -> v2.DisableProviderResponse:
        """``providers/disable``."""
        result: v2.DisableProviderResponse = await self._send(
            v2.DisableProviderRequest(provider_id=provider_id)
        )
        return result

    async def mcp_message(self, notification: v2.MessageMcpNotification) -> None:
        """``mcp/message`` (a notification for an agent-side MCP server)."""
        if not self.enabled:
            raise UsageError("client.unstable", "mcp/message is unstable: use unstable=True")
        await self._call(notification, notify=True)
