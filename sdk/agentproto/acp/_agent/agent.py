"""Writing an ACP v2 agent: the :class:`Agent` an author implements and its :class:`AgentSession`.

Theory of operation
-------------------
An agent author subclasses :class:`Agent` and overrides what the agent
supports: at least :meth:`Agent.prompt`. An :class:`~agentproto.acp.AgentRunner`
(:func:`~agentproto.acp.serve_agent`) serves it over a pair of byte streams and
keeps the protocol's duties, so the methods only do the agent's work:

* ``initialize``: the runner negotiates the protocol version first (the
  highest of :attr:`Agent.protocol_versions` at or below the client's, or the
  ``-32022`` error) and refuses session methods before it. The answer
  advertises what is served (:meth:`Agent.capabilities`: by default the
  capability markers of the methods the agent implements, a base method marked
  :func:`unserved` counting once a subclass overrides it) and the
  :meth:`Agent.auth_methods` the client can use (the client's request is
  ``runner.client`` meanwhile; a method of a type the client did not opt in to
  is left out, with a diagnostic);
* ``session/new`` creates an :class:`AgentSession` (a fresh id) and passes it
  to :meth:`Agent.new_session`;
* ``session/prompt`` is accepted at once (its response carries the id of the
  inserted user message, which is also reported as a ``user_message`` update),
  the session reports ``running``, and :meth:`Agent.prompt` runs as the
  session's *turn* in a task of its own. What it returns is the stop reason of
  the ``idle`` update that ends the work; an exception ends it with ``error``;
  a prompt while a turn runs is refused (``-32600``);
* ``session/cancel`` marks the turn cancelled, withdraws the permission
  requests of the work (each waiting :meth:`AgentSession.request_permission`
  returns ``cancelled`` at once and its request is cancelled at the client
  with ``$/cancel_request``) and calls :meth:`Agent.cancel`, which by default
  cancels the turn's task; the turn then ends with ``cancelled`` whatever it
  returns or raises (the schema's rule);
* ``session/resume`` sends the requested replay (by default every entity the
  session holds, resent with :func:`~agentproto.acp.resync_update`) and the
  current state before answering; ``session/close`` cancels the turn first.

Inside a turn, :class:`AgentSession` sends the session's updates through the
typed helpers of :class:`~agentproto.acp.SessionUpdates` (messages, tool calls
with content, diffs and terminals, plans, usage, session info; each checked
before it is sent) and asks for permission with
:meth:`AgentSession.request_permission`, which reports ``requires_action``
while it waits and answers with a :class:`~agentproto.acp.PermissionDecision`
(an unknown outcome never counts as approval).

Methods the agent does not override answer ``method not found`` (``-32601``).
Every answer is checked against the schema before it is sent: an answer that
breaks it is logged in the agent and the client gets ``internal error``.
Unstable methods are served only when the runner is started with
``unstable=True``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from agentproto._core.errors import RpcError, UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._agent.updates import SessionUpdates, ToolCall, new_id
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.permission import PermissionDecision, decide
from agentproto.acp._rpc.negotiation import SUPPORTED_VERSIONS
from agentproto.acp._rpc.turn import END_TURN, Foreground

if TYPE_CHECKING:
    from agentproto.acp._agent.runner import AgentRunner

__all__ = ["Agent", "AgentSession"]


_F = TypeVar("_F", bound=Callable[..., Any])
_UNSERVED = "__agentproto_unserved__"


def not_supported(method: str) -> RpcError:
    """The ``method not found`` error of a method the agent does not implement."""
    return RpcError(RpcErrorCode.METHOD_NOT_FOUND, f"method not found: {method} (not supported)")


def unserved(method: _F) -> _F:
    """Mark a base :class:`Agent` method that answers ``method not found``.

    An agent *implements* the method once a subclass overrides it
    (:func:`implements`); what it implements is what the default
    :meth:`Agent.capabilities` advertises.
    """
    setattr(method, _UNSERVED, True)
    return method


def implements(agent: Agent, name: str) -> bool:
    """Whether ``agent``'s method ``name`` does the work (not a base one :func:`unserved`)."""
    method = getattr(agent, name, None)
    return callable(method) and not getattr(method, _UNSERVED, False)


class AgentSession(SessionUpdates):
    """One session, as the agent holds it: its updates, its turn, its child sessions.

    Created by the runner (``session/new``, a restored ``session/resume``) or by
    :meth:`subagent`; never by hand.

    Attributes:
        session_id: the session id.
        cwd: its working directory.
        parent: the parent session of a child session, else ``None``.
        foreground: its foreground work (:class:`~agentproto.acp._rpc.turn.Foreground`).
        data: a dict for the agent's own per-session data.
    """

    def __init__(
        self,
        runner: AgentRunner,
        session_id: str,
        cwd: str,
        send: Callable[[v2.SessionUpdate], Awaitable[None]],
        parent: AgentSession | None,
    ) -> None:
        super().__init__(session_id, send)
        self.cwd = cwd
        self.parent = parent
        self.foreground = Foreground()
        self.data: dict[str, Any] = {}
        self._runner = runner
        self.turn: asyncio.Task[None] | None = None
        self._asking: set[asyncio.Future[v2.RequestPermissionOutcome]] = set()

    @property
    def cancelled(self) -> bool:
        """Whether the client cancelled the current work (check it in long loops)."""
        return self.foreground.cancel_requested

    def reopen(self) -> None:
        """Accept updates again (a closed session being resumed)."""
        self._closed = False

    # ---- foreground work --------------------------------------------------------------

    async def begin_work(self) -> None:
        """Report ``running`` for work the agent starts by itself (a prompt's turn does it).

        Raises:
            UsageError: ``turn.busy``: work is in progress.
        """
        self.check_open()
        await self.emit(self.foreground.begin(), state_ok=True)

    async def end_work(self, stop_reason: str | None = END_TURN) -> None:
        """Report ``idle`` with ``stop_reason`` for work begun with :meth:`begin_work`.

        Raises:
            UsageError: ``turn.not-active``, or ``turn.cancelled`` (the client
                cancelled: the stop reason must be ``cancelled``).
        """
        self.check_open()
        self.foreground.check_end(stop_reason)
        await self.emit(self.foreground.end(stop_reason), state_ok=True)

    def check_open(self) -> None:
        """Raise ``updates.closed`` when the session is closed."""
        if self.closed:
            raise UsageError("updates.closed", f"session {self.session_id!r} is closed")

    # ---- permission ---------------------------------------------------------------------

    async def request_permission(
        self,
        title: str,
        options: Sequence[v2.PermissionOption],
        *,
        tool_call: ToolCall | v2.ToolCallUpdate | None = None,
        description: str | None = None,
        block: bool = True,
    ) -> PermissionDecision:
        """Ask the user for permission and wait for the answer.

        Args:
            title: the prompt's title.
            options: the options offered (at least one).
            tool_call: the tool call it is about (its handle, or an upsert that
                patches the stored call as the client will).
            description: why permission is needed.
            block: report ``requires_action`` while waiting (and ``running``
                after) when the session's work is running.

        Returns:
            The decision; :attr:`~agentproto.acp.PermissionDecision.allowed` is
            true only for an offered ``allow_…`` option.

        Raises:
            UsageError: no options, or the session is closed.
            RpcError, ConnectionClosedError, RequestTimeoutError: from the request.
        """
        self.check_open()
        if not options:
            raise UsageError("permission.no-options", "offer at least one permission option")
        if isinstance(tool_call, ToolCall):
            tool_call = v2.ToolCallUpdate(tool_call_id=tool_call.tool_call_id)
        subject = (
            None if tool_call is None else v2.ToolCallRequestPermissionSubject(tool_call=tool_call)
        )
        request = v2.RequestPermissionRequest(
            session_id=self.session_id,
            title=title,
            options=list(options),
            description=description,
            subject=subject,
        )
        self.state.apply_permission_request(request)
        blocked = block and self.foreground.phase == "running"
        if blocked:
            await self.emit(self.foreground.block(), state_ok=True)
        outcome = await self._ask(request, of_work=self.foreground.active)
        resumes = not (self.closed or self.foreground.cancel_requested)
        if blocked and self.foreground.phase == "requires_action" and resumes:
            await self.emit(self.foreground.resume(), state_ok=True)
        return decide(request, outcome)

    async def _ask(
        self, request: v2.RequestPermissionRequest, *, of_work: bool
    ) -> v2.RequestPermissionOutcome:
        """The client's outcome, or ``cancelled`` once :meth:`withdraw_permissions` ran.

        A request given up on (withdrawn, or this task cancelled) is cancelled at
        the client with ``$/cancel_request``, and its late answer is ignored.
        """
        withdrawn: asyncio.Future[v2.RequestPermissionOutcome] = (
            asyncio.get_running_loop().create_future()
        )
        if of_work:
            self._asking.add(withdrawn)
        asking = asyncio.ensure_future(self._runner.connection.request(request))
        try:
            await asyncio.wait({withdrawn, asking}, return_when=asyncio.FIRST_COMPLETED)
            if withdrawn.done():
                return withdrawn.result()
            response: v2.RequestPermissionResponse = asking.result()
            return response.outcome
        finally:
            self._asking.discard(withdrawn)
            if not asking.done():
                asking.cancel()  # the connection sends $/cancel_request and forgets the id
                await asyncio.wait({asking})

    def withdraw_permissions(self) -> int:
        """Stop waiting for the permission requests of the session's foreground work.

        Each waiting :meth:`request_permission` returns a ``cancelled`` decision
        at once and its request is cancelled at the client (``$/cancel_request``).
        The runner calls it on ``session/cancel`` and ``session/close`` (the
        schema: the agent stops waiting and treats them as not approved).

        Returns:
            How many requests were withdrawn.
        """
        waiting = [future for future in self._asking if not future.done()]
        for future in waiting:
            future.set_result(v2.CancelledRequestPermissionOutcome())
        return len(waiting)

    # ---- child sessions -----------------------------------------------------------------

    async def subagent(
        self, *, title: str | None = None, session_id: str | None = None, **fields: Any
    ) -> AgentSession:
        """Announce a child session on this one (``subagent_update``) and return it.

        The announcement is sent before the child can send anything, as the
        schema requires.

        Args:
            title: the child's display title.
            session_id: its id (new when not given).
            **fields: other ``subagent_update`` fields (``description``, ``cwd``, ...).
        """
        self.check_open()
        ident = session_id or new_id("sess")
        await self.emit(
            v2.SubagentUpdateSessionUpdate(
                session_id=ident, title=UNSET if title is None else title, **fields
            )
        )
        return self._runner.add_session(ident, self.cwd, parent=self)


class Agent:
    """The base class of an ACP v2 agent: override what the agent supports.

    Attributes:
        info: the agent's name and version, sent in the ``initialize`` response.
        protocol_versions: the protocol versions it speaks.
        runner: the runner serving it (set when serving starts).
    """

    info: ClassVar[v2.Implementation] = v2.Implementation(name="agentproto-agent", version="0")
    protocol_versions: ClassVar[tuple[int, ...]] = SUPPORTED_VERSIONS
    runner: AgentRunner

    # ---- connection -------------------------------------------------------------------

    def capabilities(self) -> v2.AgentCapabilities:
        """The capabilities the ``initialize`` response advertises.

        By default, exactly what the runner serves for this agent
        (:meth:`~agentproto.acp.AgentRunner.served_capabilities`): ``session``
        once the agent implements :meth:`prompt` (the runner serves the rest
        of the baseline session methods), ``session.delete`` for
        :meth:`delete_session`, and, with ``unstable=True``, the markers of the
        unstable methods the agent overrides (``session.fork`` for
        :meth:`fork_session`, ...). Override it to advertise what the runner
        cannot know (prompt content types, MCP transports, ...), e.g. by
        adding to ``super().capabilities()``; what it returns is sent as is.

        Raises:
            UsageError: ``agent.no-runner``: no runner serves the agent (the
                default needs one to know what is served).
        """
        runner: AgentRunner | None = getattr(self, "runner", None)
        if runner is None:
            raise UsageError("agent.no-runner", "capabilities(): no AgentRunner serves this agent")
        return runner.served_capabilities()

    def auth_methods(self) -> list[v2.AuthMethod]:
        """The ``authMethods`` the ``initialize`` response advertises (none by default).

        Advertising any means serving :meth:`login` and :meth:`logout`. A method
        that needs a login raises :class:`~agentproto.acp.AuthRequiredError`
        (``-32000``) until then.

        While it runs, ``self.runner.client`` is the client's ``initialize``
        request (its capabilities), and
        :meth:`~agentproto.acp.AgentRunner.client_accepts` says whether the
        client can use a method: a type the client must opt in to (``terminal``)
        is for clients that advertised it. The runner leaves out any method the
        client cannot use, and any of a type the schema reserves (an extension's
        type starts with ``_``), with an ``auth.method-not-offered`` diagnostic.
        """
        return []

    async def initialize(
        self, request: v2.InitializeRequest, version: int
    ) -> v2.InitializeResponse:
        """Answer ``initialize``, once ``version`` is negotiated.

        Args:
            request: the client's request (its capabilities and info).
            version: the negotiated protocol version.
        """
        return v2.InitializeResponse(
            protocol_version=version,
            info=self.info,
            capabilities=self.capabilities(),
            auth_methods=self.auth_methods() or None,
        )

    @unserved
    async def login(self, request: v2.LoginAuthRequest) -> v2.LoginAuthResponse:
        """``auth/login``."""
        raise not_supported("auth/login")

    @unserved
    async def logout(self, request: v2.LogoutAuthRequest) -> v2.LogoutAuthResponse:
        """``auth/logout``."""
        raise not_supported("auth/logout")

    # ---- sessions ---------------------------------------------------------------------

    async def new_session(
        self, session: AgentSession, request: v2.NewSessionRequest
    ) -> v2.NewSessionResponse | None:
        """Set up a new session (``None``: answer with its id only)."""
        return None

    @unserved
    async def prompt(self, session: AgentSession, request: v2.PromptRequest) -> str | None:
        """Run one prompt turn: send its updates; return its stop reason (``None``: ``end_turn``).

        Raises:
            Exception: ends the turn with the ``error`` stop reason.
        """
        raise not_supported("session/prompt")

    async def cancel(self, session: AgentSession) -> None:
        """The client cancelled the session's work: by default, cancel the turn's task."""
        if session.turn is not None and not session.turn.done():
            session.turn.cancel()

    async def restore_session(
        self, session: AgentSession, request: v2.ResumeSessionRequest
    ) -> None:
        """Load a session this process does not hold, for ``session/resume``.

        Fill ``session.state`` (e.g. ``session.state.replay(updates)``, which
        sends nothing). The default knows no such session.

        Raises:
            RpcError: ``-32002`` (resource not found) by default.
        """
        raise RpcError(
            RpcErrorCode.RESOURCE_NOT_FOUND,
            f"unknown session {request.session_id!r}",
            {"sessionId": request.session_id},
        )

    @unserved
    async def record_update(self, session: AgentSession, update: v2.SessionUpdate) -> None:
        """Keep ``update`` of ``session``, called just before it is sent.

        Override it (with :meth:`restore_session`) for sessions that outlive the
        process: store each update (e.g. :func:`~agentproto.acp.dump_session_update`
        into a :class:`~agentproto.stores.SQLiteThreadStore`), and a process started
        after this one died loads them again on ``session/resume``. Every update of
        the session comes here in order (the turn's state updates and the user's
        message too), except what a ``session/resume`` re-sends (its replay and
        state snapshot: nothing new). Not called unless overridden.

        Raises:
            Exception: the update is not sent; the error reaches whoever sent it.
        """

    async def resume_session(
        self, session: AgentSession, request: v2.ResumeSessionRequest
    ) -> v2.ResumeSessionResponse | None:
        """Called on ``session/resume`` after the replay and the state snapshot were sent."""
        return None

    async def close_session(self, session: AgentSession) -> None:
        """Free a session's resources (its turn is cancelled and ended already)."""

    async def list_sessions(self, request: v2.ListSessionsRequest) -> v2.ListSessionsResponse:
        """``session/list``: by default the sessions this process holds."""
        return self.runner.list_sessions(request)

    async def delete_session(self, request: v2.DeleteSessionRequest) -> v2.DeleteSessionResponse:
        """``session/delete``: by default forget a session this process holds."""
        return self.runner.forget_session(request.session_id)

    @unserved
    async def set_config_option(self, request: Any) -> v2.SetSessionConfigOptionResponse:
        """``session/set_config_option`` (one of the ``SetSessionConfigOptionRequest`` classes)."""
        raise not_supported("session/set_config_option")

    @unserved
    async def cancel_tool_call(
        self, request: v2.CancelToolCallRequest
    ) -> v2.CancelToolCallResponse:
        """``tool_call/cancel``."""
        raise not_supported("tool_call/cancel")

    @unserved
    async def cancel_terminal(self, request: v2.CancelTerminalRequest) -> v2.CancelTerminalResponse:
        """``terminal/cancel``."""
        raise not_supported("terminal/cancel")

    # ---- unstable (served with AgentRunner(unstable=True) only) ---------------------------

    @unserved
    async def auth_status(self, request: v2.AuthStatusRequest) -> v2.AuthStatusResponse:
        """``auth/status`` (unstable)."""
        raise not_supported("auth/status")

    @unserved
    async def fork_session(self, request: v2.ForkSessionRequest) -> v2.ForkSessionResponse:
        """``session/fork`` (unstable)."""
        raise not_supported("session/fork")

    @unserved
    async def session_status(self, request: v2.SessionStatusRequest) -> v2.SessionStatusResponse:
        """``session/status`` (unstable)."""
        raise not_supported("session/status")

    @unserved
    async def archive_session(self, request: v2.ArchiveSessionRequest) -> v2.ArchiveSessionResponse:
        """``session/archive`` (unstable)."""
        raise not_supported("session/archive")

    @unserved
    async def unarchive_session(
        self, request: v2.UnarchiveSessionRequest
    ) -> v2.UnarchiveSessionResponse:
        """``session/unarchive`` (unstable)."""
        raise not_supported("session/unarchive")

    @unserved
    async def set_session_title(
        self, request: v2.SetSessionTitleRequest
    ) -> v2.SetSessionTitleResponse:
        """``session/set_title`` (unstable)."""
        raise not_supported("session/set_title")

    @unserved
    async def list_providers(self, request: v2.ListProvidersRequest) -> v2.ListProvidersResponse:
        """``providers/list`` (unstable)."""
        raise not_supported("providers/list")

    @unserved
    async def set_provider(self, request: v2.SetProviderRequest) -> v2.SetProviderResponse:
        """``providers/set`` (unstable)."""
        raise not_supported("providers/set")

    @unserved
    async def disable_provider(
        self, request: v2.DisableProviderRequest
    ) -> v2.DisableProviderResponse:
        """``providers/disable`` (unstable)."""
        raise not_supported("providers/disable")

    async def mcp_message(self, notification: v2.MessageMcpNotification) -> None:
        """``mcp/message`` notification (unstable): ignored by default."""
