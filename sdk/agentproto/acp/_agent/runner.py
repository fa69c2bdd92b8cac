"""Serving an :class:`~agentproto.acp.Agent`: the runner that keeps the agent's protocol duties.

Theory of operation
-------------------
An :class:`AgentRunner` owns an
:class:`~agentproto.acp._io.connection.AgentSideConnection` and registers one
handler per agent-side method of the generated method table, under the
:class:`~agentproto.acp.Agent` method :data:`~agentproto.acp._protocol.api.AGENT_METHODS`
names (unstable ones only with ``unstable=True``; the others then answer
``method not found``). The session lifecycle (``initialize``, ``session/new``,
``session/prompt``, ``session/cancel``, ``session/resume``, ``session/close``)
is handled here, as :mod:`agentproto.acp._agent.agent` describes; every other method
goes to the agent's method as is. :meth:`AgentRunner.serves` says which methods are
answered for the agent, and :meth:`AgentRunner.served_capabilities` turns that into
the capability markers the default ``initialize`` answer advertises (the marker →
methods table is the generated method table's, read from the schema).

Each prompt turn runs in a task of its own, tracked by the runner: when the
connection ends (the client went away, or :meth:`AgentRunner.close`), every
turn still running is cancelled and awaited, so no task outlives the runner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any

import attrs

from agentproto._core.diagnostics import Diagnostic, log_diagnostics
from agentproto._core.errors import ConnectionClosedError, RpcError, UsageError
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._agent.agent import Agent, AgentSession, implements, not_supported
from agentproto.acp._agent.updates import new_id
from agentproto.acp._io.connection import (
    AgentSideConnection,
    ByteReader,
    ByteWriter,
    switch_protocol,
)
from agentproto.acp._io.transports import stdio_streams
from agentproto.acp._protocol.api import AGENT_METHODS, is_unstable
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.methods import method_table
from agentproto.acp._protocol.wireversion import is_v1, wire_version
from agentproto.acp._rpc.negotiation import negotiate
from agentproto.acp._rpc.turn import CANCELLED, END_TURN, ERROR
from agentproto.acp._state.rules import LATEST

if TYPE_CHECKING:
    from agentproto.acp import _generated_v1 as v1

__all__ = ["AgentRunner", "run_agent", "serve_agent"]

_logger = logging.getLogger("agentproto.acp")
Handler = Callable[[Any], Awaitable[Any]]
_STATE = LATEST["state_update"]
_LATEST = frozenset(LATEST.values()) - {_STATE}  # resent as they are


def _rpc(code: int, message: str, data: Any = None) -> RpcError:
    return RpcError(code, message, data)


@cache
def _opt_in_auth_types() -> dict[str, str]:
    """Auth method types a client must opt in to: ``type`` → its ``ClientAuthCapabilities`` field.

    Read off the generated class: each marker of the client's auth capabilities
    is named by the method type it lets the agent offer (the schema's rule).
    """
    return {
        field.metadata["wire"]: field.name
        for field in attrs.fields(v2.ClientAuthCapabilities)
        if "wire" in field.metadata and not field.metadata["wire"].startswith("_")
    }


class AgentRunner:
    """Serves one :class:`~agentproto.acp.Agent` over a pair of byte streams.

    Args:
        agent: the agent.
        reader: the client's bytes (the agent's stdin).
        writer: the bytes for the client (the agent's stdout).
        unstable: also serve the unstable methods.
        close_grace: seconds ``session/close`` waits for a cancelled turn to
            end before cancelling its task.
        on_diagnostic: called with each tolerated problem (default: logged).
        **options: for the :class:`~agentproto.acp._io.connection.AgentSideConnection`
            (``request_timeout``, limits, ...).

    Attributes:
        agent: the agent.
        connection: the connection to the client.
        sessions: the sessions this process holds, by id (child sessions included).
        version: the negotiated protocol version (``None`` before ``initialize``).
        client: the client's ``initialize`` request, once received (already while
            the agent's :meth:`~agentproto.acp.Agent.initialize` runs).
    """

    def __init__(
        self,
        agent: Agent,
        reader: ByteReader,
        writer: ByteWriter,
        *,
        unstable: bool = False,
        close_grace: float = 5.0,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
        **options: Any,
    ) -> None:
        self._report = on_diagnostic or (lambda d: log_diagnostics([d]))
        self.agent = agent
        self.connection = AgentSideConnection(reader, writer, on_diagnostic=self._report, **options)
        self.unstable = unstable
        self.sessions: dict[str, AgentSession] = {}
        self.version: int | None = None
        self.client: v2.InitializeRequest | None = None
        self._grace = close_grace
        self._turns: set[asyncio.Task[None]] = set()
        self._handlers: dict[str, Handler] = {}
        self._resending: set[str] = set()  # sessions a resume re-sends: nothing to record
        agent.runner = self
        self._register()

    # ---- handlers -----------------------------------------------------------------------

    def _register(self) -> None:
        own: dict[str, Handler] = {
            "initialize": self._initialize,
            "session/new": self._new_session,
            "session/prompt": self._prompt,
            "session/cancel": self._cancel,
            "session/resume": self._resume,
            "session/close": self._close,
        }
        table = method_table(2)
        for method, entry in AGENT_METHODS.items():
            specs = [table.requests.get(method), table.notifications.get(method)]
            mine = [spec for spec in specs if spec is not None and spec.side == "agent"]
            if not mine or (is_unstable(mine[0]) and not self.unstable):
                continue
            handler = own.get(method) or self._forward(method, entry.name)
            self._handlers[method] = handler
            self.connection.handle(method, handler)

    def _forward(self, method: str, name: str) -> Handler:
        call: Handler = getattr(self.agent, name)

        async def handler(params: Any) -> Any:
            self._require_initialized(method)
            return await call(params)

        return handler

    def _require_initialized(self, method: str) -> None:
        if self.version is None:
            raise _rpc(RpcErrorCode.INVALID_REQUEST, f"{method}: call initialize first")

    def _diagnostic(self, code: str, message: str, subject: str | None = None) -> None:
        self._report(Diagnostic(code=code, message=message, subject=subject))

    async def _initialize(self, params: Any) -> Any:
        if is_v1(params, "InitializeRequest"):  # read by its version: a v1 client
            from agentproto.acp._io.v1bridge import agent_initialize_v1  # v1 on first use

            params = agent_initialize_v1(params, self._report)
        version = negotiate(params.protocol_version, self.agent.protocol_versions)
        self.client = params  # auth_methods() and capabilities() may read it
        try:
            response = await self.agent.initialize(params, version)
            if response.protocol_version != version:
                raise UsageError(
                    "initialize.version",
                    f"the agent answered version {response.protocol_version}, negotiated {version}",
                )
            response = self._drop_unaccepted_auth(response)
            _, converter = wire_version(2)  # a malformed answer fails before the state changes
            converter.load(converter.dump(response), v2.InitializeResponse)
        except BaseException:
            self.client = None
            raise
        self.version = version
        if version == 1:
            return self._speak_v1(response)
        return response

    def client_accepts(self, method: v2.AuthMethod) -> bool:
        """Whether the client may be offered ``method`` in the ``initialize`` answer.

        A method type the client must opt in to (``terminal``: a field of the
        generated ``ClientAuthCapabilities``) is accepted only when the client's
        ``initialize`` request (:attr:`client`) advertised that capability; any
        other type always is.
        """
        field = _opt_in_auth_types().get(str(getattr(method, "type", "")))
        if field is None:
            return True
        capabilities = None if self.client is None else self.client.capabilities
        auth = None if capabilities is None else capabilities.auth
        return auth is not None and getattr(auth, field) is not None

    def _drop_unaccepted_auth(self, response: v2.InitializeResponse) -> v2.InitializeResponse:
        """``response`` without the auth methods it must not offer (each reported).

        Those are the methods the client cannot use (:meth:`client_accepts`) and
        those of a type the schema reserves: a catch-all member whose ``type`` is
        neither a known one nor ``_``-prefixed (an extension).
        """
        methods = response.auth_methods or []
        kept = []
        for method in methods:
            why = self._not_offered(method)
            if why is None:
                kept.append(method)
                continue
            self._diagnostic(
                "auth.method-not-offered",
                f"auth method {getattr(method, 'method_id', '?')!r} of type "
                f"{getattr(method, 'type', None)!r} left out: {why}",
                "initialize",
            )
        if len(kept) == len(methods):
            return response
        return attrs.evolve(response, auth_methods=kept or None)

    def _not_offered(self, method: v2.AuthMethod) -> str | None:
        """Why ``method`` must not be offered, or ``None``."""
        reserved = not str(getattr(method, "type", "")).startswith("_")
        if getattr(type(method), "__agentproto_other__", False) and reserved:
            return "its type is reserved for future ACP versions (an extension's starts with '_')"
        if not self.client_accepts(method):
            return "the client did not advertise support for it"
        return None

    # ---- what is served -----------------------------------------------------------------

    def serves(self, method: str) -> bool:
        """Whether ``method`` is answered for this agent (rather than ``method not found``).

        It is when the runner registered it (an unstable method only with
        ``unstable=True``) and the agent implements it: the runner's own session
        methods, the base :class:`~agentproto.acp.Agent`'s working defaults
        (``session/list``, ``session/delete``, ...) and every method the agent
        overrides.
        """
        entry = AGENT_METHODS.get(method)
        return method in self._handlers and entry is not None and implements(self.agent, entry.name)

    def served_capabilities(self) -> v2.AgentCapabilities:
        """The capability markers of what :meth:`serves` answers.

        Each marker the schema ties to methods (the method table's
        :attr:`~agentproto.acp._protocol.methods.MethodTable.capabilities`) is set
        when every one of its methods is served and its enclosing marker, when
        that one advertises methods too, is set. Markers for features rather than
        methods (prompt content types, MCP transports) are never set here.
        """
        table, converter = wire_version(2)
        served = {
            path
            for path, methods in table.capabilities.items()
            if all(self.serves(method) for method in methods)
        }
        wire: dict[str, Any] = {}
        for path in sorted(served, key=len):
            enclosing = [path[:end] for end in range(1, len(path))]
            if any(p in table.capabilities and p not in served for p in enclosing):
                continue
            node = wire
            for key in path:
                node = node.setdefault(key, {})
        capabilities: v2.AgentCapabilities = converter.load(wire, v2.AgentCapabilities)
        return capabilities

    def _speak_v1(self, response: v2.InitializeResponse) -> v1.InitializeResponse:
        """Switch the connection to v1 on the wire (v2 for the agent); the v1 answer."""
        from agentproto.acp._io.v1bridge import AgentBridge, agent_initialize_response

        def turn_of(session_id: str) -> asyncio.Task[None] | None:
            session = self.sessions.get(session_id)
            return None if session is None else session.turn

        bridge = AgentBridge(self._handlers, turn_of, self._report)
        answer = agent_initialize_response(response, self._report)
        switch_protocol(self.connection, 1, bridge)
        for method, handler in bridge.handlers().items():
            self.connection.handle(method, handler)
        return answer

    # ---- sessions -----------------------------------------------------------------------

    def add_session(
        self, session_id: str, cwd: str, *, parent: AgentSession | None = None
    ) -> AgentSession:
        """Register a session this process holds (the runner and ``subagent()`` use it)."""
        if session_id in self.sessions:
            raise UsageError("session.duplicate-id", f"session {session_id!r} exists already")
        session = self._make_session(session_id, cwd, parent)
        self.sessions[session_id] = session
        return session

    def _make_session(self, session_id: str, cwd: str, parent: AgentSession | None) -> AgentSession:
        record = self.agent.record_update if implements(self.agent, "record_update") else None

        async def send(update: v2.SessionUpdate) -> None:
            if record is not None and session_id not in self._resending:
                await record(session, update)
            await self.connection.notify(
                v2.UpdateSessionNotification(session_id=session_id, update=update)
            )

        session = AgentSession(self, session_id, cwd, send, parent)
        return session

    def _active(self, session_id: str) -> AgentSession:
        session = self.sessions.get(session_id)
        if session is None or session.closed:
            raise _rpc(
                RpcErrorCode.RESOURCE_NOT_FOUND,
                f"no active session {session_id!r}",
                {"sessionId": session_id},
            )
        return session

    async def _new_session(self, params: v2.NewSessionRequest) -> v2.NewSessionResponse:
        self._require_initialized("session/new")
        session = self.add_session(new_id("sess"), params.cwd)
        try:
            response = await self.agent.new_session(session, params)
        except BaseException:
            del self.sessions[session.session_id]
            raise
        if response is None:
            return v2.NewSessionResponse(session_id=session.session_id)
        if response.session_id != session.session_id:
            del self.sessions[session.session_id]
            raise UsageError("session.id", "new_session() answered another session's id")
        return response

    def list_sessions(self, request: v2.ListSessionsRequest) -> v2.ListSessionsResponse:
        """The ``session/list`` answer for the sessions this process holds (not children)."""
        infos = [
            v2.SessionInfo(
                session_id=ident,
                cwd=session.cwd,
                title=None
                if session.state.session_info is None
                else session.state.session_info.title,
            )
            for ident, session in self.sessions.items()
            if session.parent is None and (request.cwd is None or session.cwd == request.cwd)
        ]
        return v2.ListSessionsResponse(sessions=infos)

    def forget_session(self, session_id: str) -> v2.DeleteSessionResponse:
        """Drop a session this process holds (``session/delete``); its turn is cancelled.

        Deleting a session this process does not hold succeeds and does nothing
        (it is not in ``session/list``, the end ``session/delete`` asks for).
        """
        session = self.sessions.pop(session_id, None)
        if session is None:
            return v2.DeleteSessionResponse()
        session.close()
        if session.turn is not None:
            session.turn.cancel()
        return v2.DeleteSessionResponse()

    # ---- the prompt turn ----------------------------------------------------------------

    async def _prompt(self, params: v2.PromptRequest) -> v2.PromptResponse:
        self._require_initialized("session/prompt")
        if not self.serves("session/prompt"):
            raise not_supported("session/prompt")
        session = self._active(params.session_id)
        if not params.prompt:
            raise _rpc(
                RpcErrorCode.INVALID_PARAMS, "the prompt is empty", {"location": "/params/prompt"}
            )
        if session.foreground.active or (session.turn is not None and not session.turn.done()):
            raise _rpc(
                RpcErrorCode.INVALID_REQUEST,
                f"session {session.session_id!r} is busy: one prompt turn at a time",
            )
        message_id = new_id("msg")
        await session.emit(session.foreground.begin(), state_ok=True)
        await session.user_message(params.prompt, message_id=message_id)
        task = asyncio.create_task(self._turn(session, params))
        session.turn = task
        self._turns.add(task)
        task.add_done_callback(self._turns.discard)
        return v2.PromptResponse(message_id=message_id)

    async def _turn(self, session: AgentSession, params: v2.PromptRequest) -> None:
        """A turn's task: run the agent's prompt, then report the stop reason."""
        error: v2.Error | None = None
        try:
            reason = await self.agent.prompt(session, params)
            reason = END_TURN if reason is None else reason
        except asyncio.CancelledError:
            if not session.cancelled:
                raise  # the runner is shutting down, or the session was deleted
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            reason = CANCELLED
        except Exception as err:
            _logger.exception("the prompt turn of session %s failed", session.session_id)
            reason = CANCELLED if session.cancelled else ERROR
            if not session.cancelled:
                error = v2.Error(code=int(RpcErrorCode.INTERNAL_ERROR), message=str(err))
        await self._end_turn(session, reason, error)

    async def _end_turn(self, session: AgentSession, reason: str, error: v2.Error | None) -> None:
        if not session.foreground.active or session.closed:
            return  # the agent ended the work itself, or the session went away
        try:
            session.foreground.check_end(reason)
        except UsageError as err:
            self._diagnostic(err.code, f"{err}; reported as {CANCELLED!r}", session.session_id)
            reason, error = CANCELLED, None
        with contextlib.suppress(ConnectionClosedError):
            await session.emit(session.foreground.end(reason, error=error), state_ok=True)

    async def _cancel(self, params: v2.CancelSessionNotification) -> None:
        session = self.sessions.get(params.session_id)
        if session is None or session.closed:
            self._diagnostic(
                "session.unknown", f"session/cancel for unknown session {params.session_id!r}"
            )
            return
        await self._cancel_work(session)

    async def _cancel_work(self, session: AgentSession) -> None:
        """``session/cancel``'s duties: withdraw the work's permission requests, cancel it."""
        if session.foreground.cancel():
            session.withdraw_permissions()
            await self.agent.cancel(session)

    async def _stop_turn(self, session: AgentSession) -> None:
        """Cancel the session's work and wait (``close_grace``) for its turn to end."""
        await self._cancel_work(session)
        turn = session.turn
        if turn is not None and not turn.done():
            _, pending = await asyncio.wait({turn}, timeout=self._grace)
            if pending:
                turn.cancel()
                await asyncio.wait({turn})
        if session.foreground.active:  # work the agent began itself
            await self._end_turn(session, CANCELLED, None)

    # ---- resume and close ---------------------------------------------------------------

    async def _resume(self, params: v2.ResumeSessionRequest) -> v2.ResumeSessionResponse:
        self._require_initialized("session/resume")
        replay = params.replay_from
        if replay is not None and not isinstance(replay, v2.StartReplayFrom):
            raise _rpc(
                RpcErrorCode.INVALID_PARAMS,
                f"unsupported replay cursor {getattr(replay, 'type', replay)!r}",
                {"location": "/params/replayFrom"},
            )
        session = self.sessions.get(params.session_id)
        if session is None:
            session = self._make_session(params.session_id, params.cwd, None)
            await self.agent.restore_session(session, params)
            self.sessions[params.session_id] = session
        session.reopen()
        self._resending.add(session.session_id)
        try:
            if replay is not None:
                await self._replay(session)
            await session.emit(session.foreground.snapshot(), state_ok=True)
        finally:
            self._resending.discard(session.session_id)
        response = await self.agent.resume_session(session, params)
        return v2.ResumeSessionResponse() if response is None else response

    async def _replay(self, session: AgentSession) -> None:
        """Resend every entity of the session, in order, to a client that holds none."""
        for key, value in list(session.state.entities()):
            if key in (_STATE, "notices"):
                continue  # the snapshot follows; notices are not history
            if key in _LATEST:
                await session.emit(value)
            else:
                await session.resync(key, known=None)

    async def _close(self, params: v2.CloseSessionRequest) -> v2.CloseSessionResponse:
        self._require_initialized("session/close")
        session = self.sessions.get(params.session_id)
        if session is None or session.closed:
            return v2.CloseSessionResponse()  # closing what is not active succeeds
        await self._stop_turn(session)
        await self.agent.close_session(session)
        session.close()
        return v2.CloseSessionResponse()

    # ---- running ------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve until the client closes the connection, then end every turn."""
        try:
            await self.connection.wait_closed()
        finally:
            await self._cancel_turns()

    async def close(self) -> None:
        """Close the connection and end every turn (nothing keeps running)."""
        await self.connection.close()
        await self._cancel_turns()

    async def _cancel_turns(self) -> None:
        turns = list(self._turns)
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*turns, return_exceptions=True)

    async def __aenter__(self) -> AgentRunner:
        self.connection.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()


async def serve_agent(
    agent: Agent,
    reader: ByteReader | None = None,
    writer: ByteWriter | None = None,
    **options: Any,
) -> None:
    """Serve ``agent`` until the client goes away (on this process's stdio by default).

    Args:
        agent: the agent.
        reader: the client's bytes (default: stdin).
        writer: the bytes for the client (default: stdout; print nothing else there).
        **options: for :class:`AgentRunner`.
    """
    if reader is None or writer is None:
        reader, writer = await stdio_streams()
    runner = AgentRunner(agent, reader, writer, **options)
    await runner.serve()


def run_agent(agent: Agent, **options: Any) -> None:
    """Run ``agent`` on stdio until the client goes away (``asyncio.run(serve_agent(...))``)."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_agent(agent, **options))
