"""Writing an ACP v2 client (an editor): :class:`AcpClient` and the state it keeps per session.

Theory of operation
-------------------
An :class:`AcpClient` wraps a
:class:`~agentproto.acp._io.connection.ClientSideConnection` (over any byte
streams: :meth:`AcpClient.connect`; or an agent subprocess:
:meth:`AcpClient.spawn`). Its calls are typed, one per agent method of the
generated method table (the unstable ones on :attr:`AcpClient.unstable`, only
with ``unstable=True``). The application answers the agent's requests through
a :class:`ClientHandlers` object it subclasses.

State. Each session the client creates, resumes, or sees announced by a
``subagent_update`` is a :class:`ClientSession` whose
:class:`~agentproto.acp.SessionState` every ``session/update`` updates, in
receive order, before :meth:`ClientHandlers.on_update` hears of it. A child
session announced by ``subagent_update`` is registered with its parent
(:attr:`ClientSession.parent`, :attr:`ClientSession.children`). Traffic for a
session the client neither created nor saw announced gets the diagnostic
``client.unannounced-session`` (the subagents RFD: the announcing
``subagent_update`` comes before any update bearing the child's id, and the
order is the agent's duty); it is still kept, so nothing is lost, in a session
without a parent, which an announcement arriving later attaches to its parent.
The RFD lets an SDK hold such traffic back until the announcement instead; this
client does not, because the announcement may never come and a permission
request cannot wait for it: it reports the broken order at once and applies
updates as they come, which leaves each session's state what in-order delivery
would have built (sessions share no entities). A permission request is handled
after the notifications received before it, so an announcement that preceded it
on the wire counts, and its tool call patches the state those updates built.
Resuming with replay starts the session's state afresh: the replayed updates
rebuild it by the same rules as live delivery, and its child sessions (their
descendants too) are forgotten, to be announced again by the replay.

The prompt turn. ``session/prompt`` is answered once the agent accepts the
prompt; the turn ends with the ``idle`` ``state_update`` that carries its stop
reason. :meth:`AcpClient.prompt` returns that stop reason: the first ``idle``
update received after the prompt was accepted, or after a ``running`` /
``requires_action`` update received since it was sent (an ``idle`` left over
from earlier work does not end it). One prompt at a time per session.

Cancelling. :meth:`AcpClient.cancel` sends ``session/cancel``, marks every
unfinished tool call of the session ``cancelled`` in the client's state and
answers the session's pending permission requests with ``cancelled`` itself;
the prompt then returns the agent's stop reason (``cancelled``).

Permissions. :meth:`ClientHandlers.on_permission` answers with an offered
option id, a typed outcome or ``None`` (``cancelled``); an option that was
not offered, or a failing handler, becomes ``cancelled`` with a diagnostic:
an answer the client cannot vouch for never approves. A ``$/cancel_request``
from the agent for a permission request is answered with ``cancelled``.

Failure. A peer that stops answering: every call takes ``timeout`` (and the
connection's ``request_timeout``); a peer that goes away fails every pending
call and prompt with :class:`~agentproto.acp.ConnectionClosedError` (``by_peer`` true;
after :meth:`AcpClient.close` it is false).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from agentproto._core.diagnostics import Diagnostic, DiagnosticLog, log_diagnostics
from agentproto._core.errors import (
    AgentProtoError,
    AuthRequiredError,
    ConnectionClosedError,
    RpcError,
    SchemaError,
    UsageError,
)
from agentproto._core.optional import missing
from agentproto._core.reconnect import DEFAULT_RECONNECT, Reconnect
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._client.unstable import UnstableCalls
from agentproto.acp._io.connection import (
    BatchCall,
    ByteReader,
    ByteWriter,
    ClientSideConnection,
    switch_protocol,
)
from agentproto.acp._io.transports import spawn_agent
from agentproto.acp._protocol.api import CLIENT_METHODS, is_unstable
from agentproto.acp._protocol.blocks import Content, content_blocks
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.methods import method_table
from agentproto.acp._protocol.permission import outcome_for
from agentproto.acp._protocol.wire import CONVERTER
from agentproto.acp._protocol.wireversion import is_v1
from agentproto.acp._rpc.negotiation import SUPPORTED_VERSIONS, check_answer, refused
from agentproto.acp._rpc.turn import CANCELLED
from agentproto.acp._state.session import SessionState

__all__ = ["AcpClient", "Answer", "ClientHandlers", "ClientSession"]

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
        self.cwd: str | None = None  # what session/new or session/resume was given
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
            state = CONVERTER.load(update.extra or {}, v2.StateUpdate)
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


_logger = logging.getLogger("agentproto.acp")
_CLOSED_ERRORS = (ConnectionClosedError,)


class AcpClient:
    """The client side of an ACP v2 connection, with typed calls and per-session state.

    Args:
        connection: the connection to the agent (not started yet).
        handlers: the application's answers to the agent's requests.
        unstable: allow the unstable methods (:attr:`unstable`) and serve the
            unstable client methods.
        versions: the protocol versions this client supports.
        on_diagnostic: called with each tolerated problem (also kept in
            :attr:`diagnostics`; default: logged).

    Attributes:
        connection: the connection.
        handlers: the application's handlers.
        sessions: every session the client knows, by id (children included).
        agent: the agent's ``initialize`` response, once initialized.
        diagnostics: the problems tolerated so far.
    """

    def __init__(
        self,
        connection: ClientSideConnection,
        handlers: ClientHandlers | None = None,
        *,
        unstable: bool = False,
        versions: Sequence[int] = SUPPORTED_VERSIONS,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
    ) -> None:
        self.connection = connection
        self.handlers = handlers or ClientHandlers()
        self.sessions: dict[str, ClientSession] = {}
        self.agent: v2.InitializeResponse | None = None
        self.diagnostics: list[Diagnostic] = DiagnosticLog()
        self._report = on_diagnostic or (lambda d: log_diagnostics([d]))
        self._versions = tuple(versions)
        self._unstable = unstable
        self._watcher: asyncio.Task[None] | None = None
        self._process_close: Callable[[], Awaitable[None]] | None = None
        self.unstable = UnstableCalls(self._call, enabled=unstable)
        self._register()

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        reader: ByteReader,
        writer: ByteWriter,
        handlers: ClientHandlers | None = None,
        *,
        unstable: bool = False,
        versions: Sequence[int] = SUPPORTED_VERSIONS,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
        **options: Any,
    ) -> AcpClient:
        """A client over a pair of byte streams (``options``: for the connection)."""
        client: AcpClient
        sink = _Sink(on_diagnostic)
        connection = ClientSideConnection(reader, writer, on_diagnostic=sink, **options)
        client = cls(
            connection, handlers, unstable=unstable, versions=versions, on_diagnostic=sink.target
        )
        sink.client = client
        return client

    @classmethod
    async def spawn(
        cls,
        command: Sequence[str],
        handlers: ClientHandlers | None = None,
        *,
        unstable: bool = False,
        versions: Sequence[int] = SUPPORTED_VERSIONS,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stderr: int | None = None,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
        **options: Any,
    ) -> AcpClient:
        """A client of an agent subprocess (its stdio); :meth:`close` also ends the process."""
        sink = _Sink(on_diagnostic)
        process = await spawn_agent(
            command, cwd=cwd, env=env, stderr=stderr, on_diagnostic=sink, **options
        )
        client = cls(
            process.connection,
            handlers,
            unstable=unstable,
            versions=versions,
            on_diagnostic=sink.target,
        )
        sink.client = client
        client._process_close = process.aclose
        return client

    @classmethod
    def connect_url(
        cls,
        url: str,
        handlers: ClientHandlers | None = None,
        *,
        headers: Mapping[str, str] | None = None,
        reconnect: Reconnect | None = DEFAULT_RECONNECT,
        keepalive: float = 15.0,
        unstable: bool = False,
        versions: Sequence[int] = SUPPORTED_VERSIONS,
        on_diagnostic: Callable[[Diagnostic], None] | None = None,
        **options: Any,
    ) -> AcpClient:
        """A client of a remote agent at ``url``: the Streamable HTTP transport for an
        ``http(s)://`` URL, a WebSocket for ``ws(s)://`` (``pip install
        'agentproto[http]'`` or ``'agentproto[websocket]'``).

        A broken stream is resumed after the last cursor seen (``reconnect``: how
        often and how fast; ``None``: never); when the agent refuses the cursor the
        session is rebuilt with ``session/resume`` and a full replay (a turn awaited
        then fails with :class:`~agentproto.acp.ConnectionClosedError`: its end may have
        been missed). :meth:`close` ends the connection (``DELETE``, or a clean close).

        Args:
            url: the agent's endpoint.
            handlers: as for :class:`AcpClient`.
            headers: sent with every request (authorization, ...).
            reconnect: how a broken stream is reopened.
            keepalive: the agent's keep-alive interval (HTTP): a stream silent for
                five of them is taken for dead and reopened.
            unstable: as for :class:`AcpClient`.
            versions: as for :class:`AcpClient`.
            on_diagnostic: as for :class:`AcpClient`.
            **options: for the connection.
        """
        try:  # httpx (and websockets) are extras
            from agentproto.acp._remote.client import HttpStreams, RemoteStreams, WebSocketStreams
        except ModuleNotFoundError as exc:
            raise missing(exc, "AcpClient.connect_url", "pip install 'agentproto[http]'") from exc

        scheme = url.partition("://")[0].lower()
        streams: RemoteStreams
        if scheme in ("ws", "wss"):
            streams = WebSocketStreams(url, headers=headers, reconnect=reconnect)
        elif scheme in ("http", "https"):
            streams = HttpStreams(url, headers=headers, reconnect=reconnect, keepalive=keepalive)
        else:
            raise UsageError("client.url", f"an ACP endpoint is http(s):// or ws(s)://: {url!r}")
        client = cls.connect(
            streams,
            streams,
            handlers,
            unstable=unstable,
            versions=versions,
            on_diagnostic=on_diagnostic,
            **options,
        )
        streams.on_refused = client._rebuild
        streams.on_renewed = client._renewed
        return client

    async def _renewed(self) -> None:
        """The agent lost the connection (its server restarted) and a new one was made:
        each session is rebuilt on it, as after a refused resume."""
        self.diagnose(
            "connection.renewed",
            "the agent no longer had the connection: a new one was made and the sessions "
            "are rebuilt with session/resume",
        )
        for session_id in list(self.sessions):
            await self._rebuild(session_id)

    async def _rebuild(self, session_id: str | None) -> None:
        """The agent could not resume ``session_id``'s stream: rebuild the session by a
        full replay (``session/resume``), then fail a turn awaited on it (its end may
        have been missed): when that await fails, the session is rebuilt."""
        session = self.sessions.get(session_id) if session_id is not None else None
        if session is None or session.cwd is None:
            return
        try:
            await self.resume_session(session.session_id, session.cwd, replay=True)
        except AgentProtoError:
            _logger.exception("rebuilding session %s failed", session_id)
        finally:
            session._fail_turn(
                ConnectionClosedError(
                    "connection.stream-lost",
                    "the session's stream was lost and could not be resumed; "
                    "the session was replayed",
                    by_peer=True,
                )
            )

    def _register(self) -> None:
        table = method_table(2)
        own: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "session/update": self._update,
            "session/request_permission": self._permission,
        }
        for method, entry in CLIENT_METHODS.items():
            specs = [table.requests.get(method), table.notifications.get(method)]
            mine = [spec for spec in specs if spec is not None and spec.side == "client"]
            if not mine or (is_unstable(mine[0]) and not self._unstable):
                continue
            self.connection.handle(method, own.get(method) or self._forward(entry.name))

    def _forward(self, name: str) -> Callable[[Any], Awaitable[Any]]:
        async def handler(params: Any) -> Any:
            result = getattr(self.handlers, name)(params)
            return await result if inspect.isawaitable(result) else result

        return handler

    def diagnose(self, code: str, message: str, subject: str | None = None) -> None:
        """Record a tolerated problem (kept in :attr:`diagnostics`, reported)."""
        self._diagnostic(Diagnostic(code=code, message=message, subject=subject))

    def _diagnostic(self, diagnostic: Diagnostic) -> None:
        self.diagnostics.append(diagnostic)
        self._report(diagnostic)

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> None:
        """Start the connection (calls start it too)."""
        if self._watcher is None:
            self.connection.start()
            self._watcher = asyncio.create_task(self._watch())

    async def _watch(self) -> None:
        await self.connection.wait_closed()
        by_peer = self.connection.closed_by_peer
        error = ConnectionClosedError(
            "connection.closed", "the agent connection closed", by_peer=by_peer
        )
        error.__cause__ = self.connection.error
        for session in self.sessions.values():
            session._fail_turn(error)

    async def close(self) -> None:
        """Close the connection (and the agent process of :meth:`spawn`); wait for every task."""
        await self.connection.close()
        if self._watcher is not None:
            await self._watcher
        if self._process_close is not None:
            await self._process_close()

    async def __aenter__(self) -> AcpClient:
        self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def _call(
        self, params: Any, *, method: str | None = None, timeout: Any = None, notify: bool = False
    ) -> Any:
        self.start()
        if notify:
            await self.connection.notify(params)
            return None
        options = {} if timeout is None else {"timeout": timeout}
        try:
            if method is not None:
                return await self.connection.request(method, params, **options)
            return await self.connection.request(params, **options)
        except AuthRequiredError as err:
            err.auth_methods = self.login_methods
            raise

    async def send_batch(
        self, calls: Sequence[BatchCall], *, timeout: float | None = None
    ) -> list[asyncio.Task[Any] | None]:
        """Send several agent methods as one JSON-RPC batch (one line): see
        :meth:`Connection.send_batch <agentproto.acp.Connection.send_batch>`, whose
        tasks and ``None`` (for a notification) this returns, in order.

        The results are the typed results, but none of the bookkeeping the typed
        calls do happens (no :class:`ClientSession` for a ``session/new``, no turn
        for a ``session/prompt``): batch calls without lifecycle, such as
        ``session/list``, as the spec advises (lifecycle-sensitive messages
        SHOULD NOT be batched).

        Args:
            calls: the members, :meth:`BatchCall.request` / :meth:`BatchCall.notify`.
            timeout: seconds each request waits (default: the connection's).

        Raises:
            UsageError: no member, a member that is not an agent method, or an
                unstable one without ``unstable=True`` (``client.unstable``).
            ConnectionClosedError: the connection is closed.
        """
        if not self._unstable:
            table = method_table(2)
            for call in calls:
                target = call.target
                kinds = table.notifications if call.notification else table.requests
                spec = (
                    kinds.get(target) if isinstance(target, str) else table.for_params(type(target))
                )
                if spec is not None and is_unstable(spec):
                    raise UsageError(
                        "client.unstable", f"{spec.method} is unstable: use unstable=True"
                    )
        self.start()
        options = {} if timeout is None else {"timeout": timeout}
        return await self.connection.send_batch(calls, **options)

    # ---- initialization and auth --------------------------------------------------------

    async def initialize(
        self,
        *,
        info: v2.Implementation | None = None,
        capabilities: v2.ClientCapabilities | None = None,
        protocol_version: int | None = None,
        timeout: float | None = None,
    ) -> v2.InitializeResponse:
        """Negotiate the protocol version and exchange capabilities.

        Args:
            info: this client's name and version.
            capabilities: what this client supports.
            protocol_version: the version to ask for (default: the latest supported).
            timeout: seconds to wait for the answer.

        Returns:
            The agent's answer (also in :attr:`agent`).

        Raises:
            UnsupportedVersionError: no common version (the connection is closed).
            RpcError, ConnectionClosedError, RequestTimeoutError: from the request.
        """
        requested = max(self._versions) if protocol_version is None else protocol_version
        request = v2.InitializeRequest(
            protocol_version=requested,
            info=info or v2.Implementation(name="agentproto-client", version="0"),
            capabilities=capabilities,
        )
        try:
            response = await self._call(request, timeout=timeout)
            if is_v1(response, "InitializeResponse"):  # read by its version: a v1 agent
                from agentproto.acp._io.v1bridge import client_initialize_v2  # v1 on first use

                response = client_initialize_v2(response, self._diagnostic)
            check_answer(requested, response.protocol_version, self._versions)
        except RpcError as err:
            if err.code != RpcErrorCode.UNSUPPORTED_PROTOCOL_VERSION:
                raise
            await self.connection.close()
            raise refused(requested, err) from err
        except UsageError:
            raise
        except Exception:
            if not self.connection.closed:
                await self.connection.close()
            raise
        if response.protocol_version == 1:
            from agentproto.acp._io.v1bridge import ClientBridge

            bridge = ClientBridge(
                self._update, self._permission, self._diagnostic, self._tool_call_title
            )
            bridge.settle = self.connection.settle
            switch_protocol(self.connection, 1, bridge)
            for method, handler in bridge.handlers().items():
                self.connection.handle(method, handler)
        self.agent = response
        return response  # type: ignore[no-any-return]

    @property
    def login_methods(self) -> list[v2.AgentAuthMethod]:
        """The agent's advertised ``authMethods`` that :meth:`login` may use (type ``agent``).

        A ``terminal`` method is run by the client as a process of its own, never
        passed to ``auth/login``; a method of an unknown type is not used.
        """
        methods = [] if self.agent is None else self.agent.auth_methods or []
        return [method for method in methods if isinstance(method, v2.AgentAuthMethod)]

    async def login(self, method_id: str, **fields: Any) -> v2.LoginAuthResponse:
        """``auth/login`` with one of the agent's :attr:`login_methods`.

        Call it when a call raised :class:`~agentproto.acp.AuthRequiredError`
        (its ``auth_methods`` are the same), then call again.

        Raises:
            UsageError: ``client.auth-method``: not initialized, or ``method_id``
                is not one of :attr:`login_methods` (the schema: a client calls
                ``auth/login`` only with an advertised method of a login flow).
            RpcError, ConnectionClosedError, RequestTimeoutError: from the request.
        """
        offered = [method.method_id for method in self.login_methods]
        if method_id not in offered:
            raise UsageError(
                "client.auth-method",
                f"{method_id!r} is not an auth method the agent advertised for auth/login "
                f"(advertised: {offered})",
            )
        result: v2.LoginAuthResponse = await self._call(
            v2.LoginAuthRequest(method_id=method_id, **fields)
        )
        return result

    async def logout(self) -> v2.LogoutAuthResponse:
        """``auth/logout``."""
        result: v2.LogoutAuthResponse = await self._call(v2.LogoutAuthRequest())
        return result

    # ---- sessions -----------------------------------------------------------------------

    def session(self, session_id: str) -> ClientSession:
        """The session ``session_id`` (raises :class:`~agentproto.UsageError` when unknown)."""
        session = self.sessions.get(session_id)
        if session is None:
            raise UsageError("client.unknown-session", f"no session {session_id!r}")
        return session

    async def new_session(self, cwd: str, **fields: Any) -> ClientSession:
        """``session/new`` (``fields``: ``mcp_servers``, ``additional_directories``, ...)."""
        response: v2.NewSessionResponse = await self._call(v2.NewSessionRequest(cwd=cwd, **fields))
        session = self.sessions.get(response.session_id) or ClientSession(response.session_id)
        session.announced = True
        session.cwd = cwd
        self.sessions[response.session_id] = session
        return session

    async def resume_session(
        self, session_id: str, cwd: str, *, replay: bool = True, **fields: Any
    ) -> ClientSession:
        """``session/resume``; with ``replay`` the agent replays the whole history.

        The session's state starts afresh when replaying (the replayed updates
        rebuild it) and its child sessions are forgotten (the replay announces them
        again; their traffic before that is ``client.unannounced-session``); without
        replay an existing state and its children are kept.
        """
        old = self.sessions.get(session_id)
        session = ClientSession(session_id) if replay or old is None else old
        forgotten: dict[str, ClientSession] = {}
        if old is not None:
            session.parent = old.parent
            if replay:  # the replay announces the children again, then their traffic
                for key in _descendants(old):
                    child = self.sessions.pop(key, None)
                    if child is not None:
                        forgotten[key] = child
            else:
                session.children = old.children
        session.cwd = cwd
        self.sessions[session_id] = session
        replay_from = v2.StartReplayFrom() if replay else None
        try:
            await self._call(
                v2.ResumeSessionRequest(
                    session_id=session_id, cwd=cwd, replay_from=replay_from, **fields
                )
            )
        except BaseException:
            if old is not None:
                for key in _descendants(session):
                    self.sessions.pop(key, None)
                self.sessions[session_id] = old
                self.sessions.update(forgotten)
            else:
                self.sessions.pop(session_id, None)
            raise
        return session

    async def close_session(self, session_id: str) -> None:
        """``session/close`` (an agent's ``-32002`` counts as closed, as the schema says)."""
        try:
            await self._call(v2.CloseSessionRequest(session_id=session_id))
        except RpcError as err:
            if err.code != RpcErrorCode.RESOURCE_NOT_FOUND:
                raise

    async def list_sessions(self, **fields: Any) -> v2.ListSessionsResponse:
        """``session/list`` (``fields``: ``cwd``, ``cursor``, ...)."""
        result: v2.ListSessionsResponse = await self._call(v2.ListSessionsRequest(**fields))
        return result

    async def delete_session(self, session_id: str) -> None:
        """``session/delete``; the client forgets the session too."""
        await self._call(v2.DeleteSessionRequest(session_id=session_id))
        self.sessions.pop(session_id, None)

    async def set_config_option(self, request: Any) -> v2.SetSessionConfigOptionResponse:
        """``session/set_config_option`` (one of the ``SetSessionConfigOptionRequest`` classes)."""
        result: v2.SetSessionConfigOptionResponse = await self._call(
            request, method="session/set_config_option"
        )
        return result

    async def cancel_tool_call(self, session_id: str, tool_call_id: str) -> None:
        """``tool_call/cancel``: ask the agent to cancel one tool call."""
        await self._call(v2.CancelToolCallRequest(session_id=session_id, tool_call_id=tool_call_id))

    async def cancel_terminal(self, session_id: str, terminal_id: str) -> None:
        """``terminal/cancel``: ask the agent to stop one terminal's command."""
        await self._call(v2.CancelTerminalRequest(session_id=session_id, terminal_id=terminal_id))

    # ---- the prompt turn ----------------------------------------------------------------

    async def prompt(
        self,
        session_id: str,
        prompt: Content,
        *,
        timeout: float | None = None,
    ) -> str | None:
        """Send a prompt and wait for the end of the work it starts.

        Args:
            session_id: the session.
            prompt: text, a content block, or blocks.
            timeout: seconds for the whole turn (``None``: no limit besides the
                connection's ``request_timeout`` for the acceptance).

        Returns:
            The stop reason (``"end_turn"``, ``"cancelled"``, ...; ``None`` when
            the agent reported none).

        Raises:
            UsageError: unknown session, or a prompt of this client is running on it.
            RpcError: the agent refused the prompt.
            TimeoutError: ``timeout`` expired (the work is not cancelled).
            ConnectionClosedError: the connection closed first.
        """
        session = self.session(session_id)
        if session.busy:
            raise UsageError("client.busy", f"a prompt is running on session {session_id!r}")
        blocks = content_blocks(prompt)
        session._turn = asyncio.get_running_loop().create_future()
        session._armed = False
        try:
            async with asyncio.timeout(timeout):
                await self._call(v2.PromptRequest(session_id=session_id, prompt=blocks))
                session._armed = True
                if self.connection.closed:
                    by_peer = self.connection.closed_by_peer
                    closed = ConnectionClosedError(
                        "connection.closed", "the agent connection closed", by_peer=by_peer
                    )
                    session._fail_turn(closed)
                return await session._turn
        finally:
            session._turn = None

    async def cancel(self, session_id: str) -> None:
        """``session/cancel``: stop the session's work (see the module documentation)."""
        session = self.session(session_id)
        self.start()
        await self.connection.notify(v2.CancelSessionNotification(session_id=session_id))
        session._cancel_locally()

    # ---- the agent's calls --------------------------------------------------------------

    def _known(self, session_id: str, method: str) -> ClientSession:
        session = self.sessions.get(session_id)
        if session is None:
            self.diagnose(
                "client.unannounced-session",
                f"{method} for session {session_id!r}, which this client neither created "
                "nor saw announced by a subagent_update",
                session_id,
            )
            session = self.sessions[session_id] = ClientSession(session_id)
            session.announced = False
        return session

    async def _update(self, params: v2.UpdateSessionNotification) -> None:
        session = self._known(params.session_id, "session/update")
        update = params.update
        try:
            session.state.apply(update)
        except (SchemaError, UsageError) as err:
            self.diagnose("client.bad-update", f"session {params.session_id!r}: {err}")
            return
        if isinstance(update, v2.SubagentUpdateSessionUpdate):
            self._announce(session, update.session_id)
        elif isinstance(update, v2.StateUpdateSessionUpdate):
            session._observe_state(update)
        try:
            result = self.handlers.on_update(session, update)
            if inspect.isawaitable(result):
                await result
        except Exception:
            _logger.exception("the on_update handler failed")

    def _tool_call_title(self, session_id: str, tool_call_id: str) -> str | None:
        session = self.sessions.get(session_id)
        call = None if session is None else session.state.tool_calls.get(tool_call_id)
        return None if call is None else call.title

    def _announce(self, parent: ClientSession, child_id: str) -> None:
        child = self.sessions.get(child_id)
        if child is None:
            child = self.sessions[child_id] = ClientSession(child_id, parent=parent)
        elif child.parent is None and not child.announced:
            child.parent = parent  # announced late: the diagnostic was reported already
        child.announced = True
        if child.parent is parent:
            parent.children[child_id] = child

    async def _permission(
        self, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionResponse:
        await self.connection.settle()  # the updates (an announcement) sent before it first
        session = self._known(params.session_id, "session/request_permission")
        try:
            session.state.apply_permission_request(params)
        except (SchemaError, UsageError) as err:
            self.diagnose("client.bad-permission-subject", str(err), params.session_id)
        local: asyncio.Future[v2.RequestPermissionOutcome] = (
            asyncio.get_running_loop().create_future()
        )
        session._permissions.add(local)
        asking = asyncio.ensure_future(self._ask(session, params))
        try:
            await asyncio.wait({local, asking}, return_when=asyncio.FIRST_COMPLETED)
            outcome = local.result() if local.done() else asking.result()
        except asyncio.CancelledError:
            if self.connection.closed:
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # the agent withdrew the request: answer cancelled
            outcome = v2.CancelledRequestPermissionOutcome()
        finally:
            session._permissions.discard(local)
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asking
        return v2.RequestPermissionResponse(outcome=outcome)

    async def _ask(
        self, session: ClientSession, params: v2.RequestPermissionRequest
    ) -> v2.RequestPermissionOutcome:
        try:
            result = self.handlers.on_permission(session, params)
            answer = await result if inspect.isawaitable(result) else result
        except Exception as err:
            _logger.exception("the on_permission handler failed")
            answer = None
            self.diagnose("client.permission-failed", f"the handler failed: {err!r}")
        outcome, problem = outcome_for(params, answer)
        if problem is not None:
            self.diagnose("client.permission-answer", f"{problem}: answered {CANCELLED!r}")
        return outcome


def _descendants(session: ClientSession) -> list[str]:
    """The ids of every child session of ``session``, theirs included."""
    found: list[str] = []
    waiting = list(session.children.values())
    while waiting:
        child = waiting.pop()
        if child.session_id not in found and child is not session:
            found.append(child.session_id)
            waiting.extend(child.children.values())
    return found


class _Sink:
    """The connection's diagnostics, recorded by the client once it exists."""

    def __init__(self, target: Callable[[Diagnostic], None] | None) -> None:
        self.target = target
        self.client: AcpClient | None = None

    def __call__(self, diagnostic: Diagnostic) -> None:
        if self.client is not None:
            self.client._diagnostic(diagnostic)
        elif self.target is not None:
            self.target(diagnostic)
        else:
            log_diagnostics([diagnostic])
