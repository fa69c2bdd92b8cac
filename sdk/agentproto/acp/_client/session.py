"""What an ACP client keeps per session, and what the application answers the agent with.

:class:`ClientSession` is one session of an :class:`~agentproto.acp.AcpClient`:
its :class:`~agentproto.acp.SessionState`, its place among parent and child
sessions, its foreground state and the prompt waiting for its stop reason (see
:mod:`agentproto.acp._client.client` for the rules). :class:`ClientHandlers` is the
application's side: subclass it to answer the agent's requests.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentproto._core.errors import RpcError, SchemaError
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.wire import _converter
from agentproto.acp._rpc.turn import CANCELLED
from agentproto.acp._state.session import SessionState

__all__ = ["Answer", "ClientHandlers", "ClientSession"]

Answer = str | v2.RequestPermissionOutcome | None
"""An application's answer to a permission request: an offered option id, an outcome,
or ``None`` (``cancelled``)."""


class ClientSession:
    """One session as the client keeps it.

    Attributes:
        session_id: the session id.
        state: its entities, updated by every ``session/update``.
        parent: the session that announced it (a child session), else ``None``.
        children: the child sessions it announced, by id.
        announced: whether the client created, resumed or saw it announced.
        stop_reason: the stop reason of the last work that ended.
    """

    def __init__(self, session_id: str, *, parent: ClientSession | None = None) -> None:
        self.session_id = session_id
        self.state = SessionState(session_id)
        self.parent = parent
        self.children: dict[str, ClientSession] = {}
        self.announced = True
        self.stop_reason: str | None = None
        self._phase = "idle"
        self._turn: asyncio.Future[str | None] | None = None
        self._armed = False
        self._permissions: set[asyncio.Future[v2.RequestPermissionOutcome]] = set()

    def __repr__(self) -> str:
        return f"<ClientSession {self.session_id!r} {self._phase}>"

    @property
    def phase(self) -> str:
        """The last reported foreground state (``idle`` until one is reported)."""
        return self._phase

    @property
    def busy(self) -> bool:
        """Whether a prompt of this client waits for its stop reason."""
        return self._turn is not None

    def _observe_state(self, update: v2.StateUpdateSessionUpdate) -> None:
        try:
            state = _converter.load(update.extra or {}, v2.StateUpdate)
        except SchemaError:
            return
        self._phase = state.state
        if isinstance(state, v2.IdleStateUpdate):
            self.stop_reason = state.stop_reason
            if self._turn is not None and self._armed and not self._turn.done():
                self._turn.set_result(state.stop_reason)
        elif isinstance(state, v2.RunningStateUpdate | v2.RequiresActionStateUpdate):
            self._armed = True

    def _fail_turn(self, error: BaseException) -> None:
        if self._turn is not None and not self._turn.done():
            self._turn.set_exception(error)

    def _cancel_locally(self) -> None:
        """Mark unfinished tool calls cancelled; answer pending permissions ``cancelled``."""
        for call in list(self.state.tool_calls.values()):
            if not call.finished:
                self.state.apply(
                    v2.ToolCallUpdateSessionUpdate(tool_call_id=call.tool_call_id, status=CANCELLED)
                )
        for future in self._permissions:
            if not future.done():
                future.set_result(v2.CancelledRequestPermissionOutcome())


class ClientHandlers:
    """What the application does when the agent calls: subclass and override.

    Every method may be a coroutine. The defaults: updates are only folded,
    permission requests are answered ``cancelled`` (never approved), and
    requests the application does not handle answer ``method not found``.
    """

    async def on_update(self, session: ClientSession, update: v2.SessionUpdate) -> None:
        """A ``session/update`` was applied to ``session.state``."""

    async def on_permission(
        self, session: ClientSession, request: v2.RequestPermissionRequest
    ) -> Answer:
        """Answer a permission request: an offered option id, an outcome, or ``None``."""
        return None

    async def on_elicitation(self, request: Any) -> Any:
        """Answer ``elicitation/create`` (a ``CreateElicitationResponse``)."""
        raise RpcError(RpcErrorCode.METHOD_NOT_FOUND, "elicitation is not supported")

    async def on_elicitation_complete(
        self, notification: v2.CompleteElicitationNotification
    ) -> None:
        """``elicitation/complete``."""

    async def on_auth_status(self, notification: v2.AuthStatusUpdateNotification) -> None:
        """``auth/status_update`` (unstable)."""

    async def on_mcp_message(self, request: v2.MessageMcpRequest) -> Any:
        """``mcp/message`` request (unstable): an MCP message for a client-side server."""
        raise RpcError(RpcErrorCode.METHOD_NOT_FOUND, "MCP over ACP is not supported")
