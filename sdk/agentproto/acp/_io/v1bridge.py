"""ACP v1 peers behind a v2 API: what a connection sends and serves once ``initialize`` says 1.

Theory of operation
-------------------
When ``initialize`` negotiates version 1, the connection switches to the v1
method table (:func:`~agentproto.acp._io.connection.switch_protocol`)
and installs a bridge of this module as its translator; the application keeps
speaking v2 both ways. The bridge:

* converts the params and results of the methods both versions share by their
  wire shape (a field one version lacks is dropped, with a diagnostic);
* translates ``session/update`` (and a permission request's ``toolCall``) with
  the stateful adapters, one per session: :class:`~agentproto.acp.V1ToV2Adapter`
  on the client side, :class:`~agentproto.acp.V2ToV1Adapter` on the agent side;
* maps the end of a turn: a v1 turn ends with the ``session/prompt`` response
  and its ``stopReason``; a v2 turn with the ``idle`` ``state_update``. The
  client bridge reports ``running`` when it sends a prompt, and the v1 stop
  reason as the ``idle`` update, after the updates that came before the
  response; the agent bridge withholds ``state_update`` (v1 has none) and
  answers the v1 prompt once the turn's ``idle`` update was sent, with its stop
  reason (a failed turn, stop reason ``error``, answers with its error);
* maps v1 ``session/load`` to v2 ``session/resume`` with replay, both ways;
  each replay starts a fresh adapter for its session, since the peer rebuilds
  its view from nothing and an adapter remembers what it sent.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Generic, TypeVar, cast

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import RpcError, SchemaError, UsageError
from agentproto.acp import _generated_v1 as v1
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.methods import method_table
from agentproto.acp._protocol.wire import CONVERTER as _v2_converter
from agentproto.acp._protocol.wire import make_v1_converter
from agentproto.acp._relay.to_v1 import V2ToV1Adapter
from agentproto.acp._relay.versions import V1ToV2Adapter
from agentproto.acp._rpc.turn import CANCELLED, ERROR, state_update

__all__ = [
    "AgentBridge",
    "ClientBridge",
    "agent_capabilities_v1",
    "agent_capabilities_v2",
    "agent_initialize_response",
    "agent_initialize_v1",
    "client_initialize_v2",
]

Handler = Callable[[Any], Awaitable[Any]]
Report = Callable[[Diagnostic], None]
Send = Callable[..., Awaitable[Any]]
_v1_converter = make_v1_converter()
_V1, _V2 = method_table(1), method_table(2)
_LOAD = v1.LoadSessionRequest.__agentproto_method__
_RESUME = v2.ResumeSessionRequest.__agentproto_method__
_PROMPT = v2.PromptRequest.__agentproto_method__
_UPDATE = v2.UpdateSessionNotification.__agentproto_method__
_PERMISSION = v2.RequestPermissionRequest.__agentproto_method__
_V1_STOP_REASONS = frozenset(v1.ENUM_VALUES["StopReason"])
_UNKNOWN_PEER = v2.Implementation(name="unknown", version="")
# the v2 requests v1 names otherwise (same params and results but for the name)
_V1_NAMES = {
    v2.LoginAuthRequest.__agentproto_method__: v1.AuthenticateRequest.__agentproto_method__,
    v2.LogoutAuthRequest.__agentproto_method__: v1.LogoutRequest.__agentproto_method__,
}
_AGENT_AUTH = str(attrs.fields(v2.AgentAuthMethod).type.default)  # v1: the untagged default
_V1_AUTH_TYPES = frozenset({_AGENT_AUTH, attrs.fields(v1.TerminalAuthMethod).type.default})
_Adapter = TypeVar("_Adapter", V1ToV2Adapter, V2ToV1Adapter)


def _convert(value: Any, tp: Any, *, to_v1: bool, report: Report) -> Any:
    """``value`` in the other version's class ``tp``, by its wire shape (dropped parts reported)."""
    source, target = (_v2_converter, _v1_converter) if to_v1 else (_v1_converter, _v2_converter)
    wire = source.dump(value) if not isinstance(value, dict) else dict(value)
    if to_v1 and "mcpServers" in _required(tp):  # optional in v2, required in v1
        wire.setdefault("mcpServers", [])
    repairs: list[Diagnostic] = []
    try:
        converted = target.load(wire, tp, diagnostics=repairs)
    except SchemaError as err:
        version = "v1" if to_v1 else "v2"
        raise UsageError(
            "v1.not-convertible", f"{tp.__name__} has no {version} form: {err}"
        ) from err
    for repair in repairs:
        report(repair)
    return converted


def _required(tp: Any) -> frozenset[str]:
    if not attrs.has(tp):
        return frozenset()
    fields = attrs.fields(tp)
    return frozenset(f.metadata.get("wire", "") for f in fields if f.metadata.get("required"))


def _v2_target(target: Any, params: Any, kind: str) -> tuple[str, Any]:
    """The method and typed v2 params of what the application sends."""
    if not isinstance(target, str):
        spec = _V2.for_params(type(target))
        if spec is None:
            raise UsageError("rpc.not-params", f"{type(target).__name__} is not v2 params")
        return spec.method, target
    if isinstance(params, dict) and not target.startswith("_"):
        spec = (_V2.requests if kind == "request" else _V2.notifications).get(target)
        if spec is not None and spec.params is not None:
            return target, _v2_converter.load(params, spec.params)
    return target, params


def _v1_spec(method: str, kind: str) -> Any:
    method = _V1_NAMES.get(method, method) if kind == "request" else method
    spec = (_V1.requests if kind == "request" else _V1.notifications).get(method)
    if spec is None:
        raise UsageError("v1.unsupported", f"{method!r} does not exist in ACP v1")
    return spec


def _auth_methods(wire: dict[str, Any], *, to_v1: bool, report: Report) -> None:
    """Rename the ids of ``wire``'s ``authMethods`` (v1 ``id``, v2 ``methodId``), in place.

    A v1 method without ``type`` is an ``agent`` method (v2 tags it); v1 has only
    ``agent`` and ``terminal`` methods, so a v2 method of another type is left out,
    reported as ``v1.auth-method``.
    """
    methods = wire.get("authMethods")
    if not isinstance(methods, list):
        return
    old, new = ("methodId", "id") if to_v1 else ("id", "methodId")
    out = []
    for method in methods:
        if not isinstance(method, dict):
            out.append(method)
            continue
        method = dict(method)
        kind = method.get("type", _AGENT_AUTH)
        if to_v1 and kind not in _V1_AUTH_TYPES:
            report(
                Diagnostic(
                    code="v1.auth-method",
                    message=f"auth method {method.get('methodId')!r} of type {kind!r} has no v1 "
                    "form: not advertised to the v1 client",
                    subject="authMethods",
                )
            )
            continue
        if old in method:
            method[new] = method.pop(old)
        if to_v1 and kind == _AGENT_AUTH:
            method.pop("type", None)  # v1's default
        elif not to_v1:
            method["type"] = kind
        out.append(method)
    wire["authMethods"] = out


def _wire_names(cls: type) -> frozenset[str]:
    """The wire names of a generated class's fields (``_meta`` left out)."""
    return frozenset(f.metadata.get("wire", f.name) for f in attrs.fields(cls)) - {"_meta"}


def _markers(flags: Any, cls: type) -> dict[str, Any]:
    """v1 boolean flags as the v2 object markers of ``cls`` (``True`` → ``{}``)."""
    names = _wire_names(cls)
    return {k: {} for k, v in (flags or {}).items() if v is True and k in names}


def _flags(markers: Any, cls: type) -> dict[str, bool]:
    """v2 object markers as the v1 boolean flags of ``cls`` (a marker given → ``True``)."""
    names = _wire_names(cls)
    return {k: True for k, v in (markers or {}).items() if v is not None and k in names}


# v2 moved v1's prompt and MCP flags under ``session``, as object markers
_MOVED: Final = (
    ("prompt", "promptCapabilities", v2.PromptCapabilities, v1.PromptCapabilities),
    ("mcp", "mcpCapabilities", v2.McpCapabilities, v1.McpCapabilities),
)


def agent_capabilities_v1(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """A v2 agent's capability markers (wire JSON) in v1's shape.

    ``session`` becomes v1's ``sessionCapabilities`` (the markers both versions
    name alike) plus the v1 markers of what v2's ``session`` implies (those v1's
    ``SessionCapabilities`` has and v2's lacks: ``list``, ``resume``, ``close``), and
    its ``prompt`` / ``mcp`` markers v1's ``promptCapabilities`` / ``mcpCapabilities``
    flags; the other members (``auth``, ``providers``, ``_meta``) are kept.
    """
    kept = _wire_names(v1.AgentCapabilities) | {"_meta"}
    out = {k: v for k, v in capabilities.items() if k in kept and k != "session"}
    session = capabilities.get("session")
    if session is not None:
        v1_names = _wire_names(v1.SessionCapabilities)
        shared = {k: v for k, v in session.items() if k in v1_names and v is not None}
        implied = v1_names - _wire_names(v2.SessionCapabilities)
        out["sessionCapabilities"] = {name: {} for name in sorted(implied)} | shared
        for inner, flags, _, v1_cls in _MOVED:
            out[flags] = _flags(session.get(inner), v1_cls)
    return out


def agent_capabilities_v2(capabilities: Mapping[str, Any]) -> dict[str, Any]:
    """A v1 agent's capabilities (wire JSON) as v2 markers: the inverse of
    :func:`agent_capabilities_v1` (a v1 agent serves sessions: ``session`` is always
    there)."""
    kept = _wire_names(v2.AgentCapabilities) | {"_meta"}
    out = {k: v for k, v in capabilities.items() if k in kept and k != "session"}
    v2_names = _wire_names(v2.SessionCapabilities)
    old = capabilities.get("sessionCapabilities") or {}
    session: dict[str, Any] = {k: v for k, v in old.items() if k in v2_names and v is not None}
    for inner, flags, v2_cls, _ in _MOVED:
        markers = _markers(capabilities.get(flags), v2_cls)
        if markers:
            session[inner] = markers
    out["session"] = session
    return out


def _initialize_v2(value: Any, tp: Any, prefix: str, report: Report) -> Any:
    """A v1 ``initialize`` message read as v2: ``{prefix}Info`` and ``{prefix}Capabilities``."""
    wire: dict[str, Any] = _v1_converter.dump(value)
    _auth_methods(wire, to_v1=False, report=report)
    info = wire.pop(f"{prefix}Info", None)
    capabilities = wire.pop(f"{prefix}Capabilities", None)
    wire["info"] = info if info is not None else _v2_converter.dump(_UNKNOWN_PEER)
    if capabilities is not None:
        wire["capabilities"] = (
            agent_capabilities_v2(capabilities) if prefix == "agent" else capabilities
        )
    return _convert(wire, tp, to_v1=False, report=report)


def client_initialize_v2(response: v1.InitializeResponse, report: Report) -> v2.InitializeResponse:
    """A v1 agent's ``initialize`` answer, read as v2 (``agentInfo`` and capabilities renamed)."""
    result: v2.InitializeResponse = _initialize_v2(response, v2.InitializeResponse, "agent", report)
    return result


def agent_initialize_v1(request: v1.InitializeRequest, report: Report) -> v2.InitializeRequest:
    """A v1 client's ``initialize`` request, read as v2 (``clientInfo`` and the capabilities)."""
    result: v2.InitializeRequest = _initialize_v2(request, v2.InitializeRequest, "client", report)
    return result


def agent_initialize_response(
    response: v2.InitializeResponse, report: Report
) -> v1.InitializeResponse:
    """The v1 form of an agent's v2 ``initialize`` answer (it serves ``session/load``)."""
    wire: dict[str, Any] = _v2_converter.dump(response)
    info = wire.pop("info", None)
    capabilities = agent_capabilities_v1(wire.pop("capabilities", None) or {})
    capabilities["loadSession"] = True  # session/load is served as a resume with replay
    wire |= {"agentInfo": info, "agentCapabilities": capabilities}
    _auth_methods(wire, to_v1=True, report=report)
    result: v1.InitializeResponse = _convert(wire, v1.InitializeResponse, to_v1=True, report=report)
    return result


class _Bridge(Generic[_Adapter]):
    """What both bridges share: per-session adapters, diagnostics, plain conversions."""

    _new_adapter: Callable[[], _Adapter]

    def __init__(self, report: Report) -> None:
        self._report = report
        self._adapters: dict[str, _Adapter] = {}

    def _adapter(self, session_id: str, *, fresh: bool = False) -> _Adapter:
        """The session's adapter (``fresh``: a new one, for a replay from nothing)."""
        if fresh or session_id not in self._adapters:
            self._adapters[session_id] = self._new_adapter()
        return self._adapters[session_id]

    def _to_v2(self, value: Any, tp: Any) -> Any:
        return _convert(value, tp, to_v1=False, report=self._report)

    def _drain(self, adapter: V1ToV2Adapter | V2ToV1Adapter) -> None:
        for diagnostic in adapter.diagnostics:
            self._report(diagnostic)
        del adapter.diagnostics[:]

    async def _plain_request(self, send: Send, method: str, params: Any) -> Any:
        spec = _v1_spec(method, "request")
        result = await send(_convert(params, spec.params, to_v1=True, report=self._report))
        v2_spec = _V2.requests[method]
        if v2_spec.result is None or result is None:
            return result
        return _convert(result, v2_spec.result, to_v1=False, report=self._report)


class ClientBridge(_Bridge[V1ToV2Adapter]):
    """The client side with a v1 agent (a :class:`~agentproto.acp._io.connection.Translator`).

    Args:
        update: the client's v2 ``session/update`` handler.
        permission: the client's v2 ``session/request_permission`` handler.
        report: where diagnostics go.
        tool_call_title: the title the client holds for a tool call (session id,
            tool call id), if any: a v1 permission request's title is its tool
            call's, which its ``toolCall`` need not repeat.
    """

    _new_adapter = V1ToV2Adapter

    def __init__(
        self,
        update: Handler,
        permission: Handler,
        report: Report,
        tool_call_title: Callable[[str, str], str | None] = lambda session, call: None,
    ) -> None:
        super().__init__(report)
        self._update = update
        self._permission = permission
        self._title_of = tool_call_title
        self._stops: dict[str, str | None] = {}
        self._prompts = itertools.count(1)
        self.settle: Callable[[], Awaitable[None]] | None = None

    def handlers(self) -> dict[str, Handler]:
        """The v1 client methods this bridge serves, by method."""
        return {_UPDATE: self.on_update, _PERMISSION: self.on_permission}

    async def on_update(self, params: v1.SessionNotification) -> None:
        """A v1 ``session/update``: its v2 updates go to the client."""
        adapter = self._adapter(params.session_id)
        converted = adapter.convert_notification(params)
        self._drain(adapter)
        for notification in converted:
            await self._update(notification)

    async def on_permission(self, params: v1.RequestPermissionRequest) -> Any:
        """A v1 permission request: its tool call becomes the v2 subject."""
        adapter = self._adapter(params.session_id)
        call = _v1_converter.dump(params.tool_call) | {"sessionUpdate": "tool_call_update"}
        update = _v1_converter.load(call, v1.SessionUpdate)
        updates = adapter.convert(update, session_id=params.session_id)
        self._drain(adapter)
        subject = None
        if updates:
            wire = _v2_converter.dump(updates[0])
            wire.pop("sessionUpdate", None)
            tool_call = self._to_v2(wire, v2.ToolCallUpdate)
            subject = v2.ToolCallRequestPermissionSubject(tool_call=tool_call)
        title = params.tool_call.title
        if title is None:
            title = self._title_of(params.session_id, params.tool_call.tool_call_id)
        request = v2.RequestPermissionRequest(
            session_id=params.session_id,
            title=title or "",
            options=[self._to_v2(option, v2.PermissionOption) for option in params.options],
            subject=subject,
            meta=params.meta,
        )
        response = await self._permission(request)
        return _convert(response, v1.RequestPermissionResponse, to_v1=True, report=self._report)

    async def request(self, send: Send, target: Any, params: Any) -> Any:
        """Send a v2 request to the v1 agent."""
        method, params = _v2_target(target, params, "request")
        if method == _PROMPT:
            return await self._prompt(send, params)
        if method == _RESUME:
            return await self._load(send, params)
        return await self._plain_request(send, method, params)

    async def notify(self, send: Send, target: Any, params: Any) -> None:
        """Send a v2 notification to the v1 agent."""
        method, params = _v2_target(target, params, "notification")
        spec = _v1_spec(method, "notification")
        await send(_convert(params, spec.params, to_v1=True, report=self._report))

    async def _state(self, session_id: str, state: Any) -> None:
        await self._update(
            v2.UpdateSessionNotification(session_id=session_id, update=state_update(state))
        )

    async def _settled(self) -> None:
        if self.settle is not None:
            await self.settle()

    async def _prompt(self, send: Send, params: v2.PromptRequest) -> v2.PromptResponse:
        session_id = params.session_id
        await self._state(session_id, v2.RunningStateUpdate())
        request = _convert(params, v1.PromptRequest, to_v1=True, report=self._report)
        try:
            response: v1.PromptResponse = await send(request)
        except RpcError:
            await self._settled()
            await self._state(session_id, v2.IdleStateUpdate(stop_reason=ERROR))
            raise
        await self._settled()  # the updates sent before the response come first
        self._stops[session_id] = response.stop_reason
        await self._state(session_id, v2.IdleStateUpdate(stop_reason=response.stop_reason))
        return v2.PromptResponse(message_id=f"v1-prompt-{next(self._prompts)}")

    async def _load(self, send: Send, params: v2.ResumeSessionRequest) -> Any:
        if params.replay_from is None:
            return await self._plain_request(send, _RESUME, params)
        if not isinstance(params.replay_from, v2.StartReplayFrom):
            raise UsageError("v1.unsupported", "a v1 agent replays only from the start")
        self._adapter(params.session_id, fresh=True)
        wire = _v2_converter.dump(params)
        wire.pop("replayFrom")
        await send(_convert(wire, v1.LoadSessionRequest, to_v1=True, report=self._report))
        await self._settled()
        stop = self._stops.get(params.session_id)
        await self._state(params.session_id, v2.IdleStateUpdate(stop_reason=stop))
        return v2.ResumeSessionResponse()


class AgentBridge(_Bridge[V2ToV1Adapter]):
    """The agent side with a v1 client (a :class:`~agentproto.acp._io.connection.Translator`).

    Args:
        handlers: the runner's v2 handlers, by method.
        turn_of: the task of a session's running turn, if any.
        report: where diagnostics go.
    """

    _new_adapter = V2ToV1Adapter

    def __init__(
        self,
        handlers: Mapping[str, Handler],
        turn_of: Callable[[str], asyncio.Task[None] | None],
        report: Report,
    ) -> None:
        super().__init__(report)
        self._v2 = handlers
        self._turn_of = turn_of
        self._ends: dict[str, v2.IdleStateUpdate] = {}

    def handlers(self) -> dict[str, Handler]:
        """The v1 agent methods this bridge serves, by method (those with a v2 handler)."""
        own: dict[str, Handler] = {_PROMPT: self.on_prompt}
        if _RESUME in self._v2:
            own[_LOAD] = self.on_load
        for method, handler in self._v2.items():
            v1_name = _V1_NAMES.get(method, method)
            if method not in own and method != _RESUME and v1_name in _V1.requests:
                own[v1_name] = self._plain(method, handler)
            elif method in _V1.notifications:
                own[method] = self._plain(method, handler, notification=True)
        return own

    def _plain(self, method: str, handler: Handler, *, notification: bool = False) -> Handler:
        v2_spec = (_V2.notifications if notification else _V2.requests)[method]
        v1_spec = _v1_spec(method, "notification" if notification else "request")

        async def serve(params: Any) -> Any:
            result = await handler(self._to_v2(params, v2_spec.params))
            if notification or v1_spec.result is None or result is None:
                return result
            return _convert(result, v1_spec.result, to_v1=True, report=self._report)

        return serve

    async def on_prompt(self, params: v1.PromptRequest) -> v1.PromptResponse:
        """A v1 prompt: answered when the v2 turn ends, with its stop reason."""
        request = _convert(params, v2.PromptRequest, to_v1=False, report=self._report)
        self._ends.pop(params.session_id, None)
        await self._v2[_PROMPT](request)
        turn = self._turn_of(params.session_id)
        if turn is not None:
            await asyncio.wait({turn})
        end = self._ends.pop(params.session_id, None)
        reason = CANCELLED if end is None or end.stop_reason is None else end.stop_reason
        if reason == ERROR:
            error = (end.extra or {}).get("error") if end is not None else None
            message = error.get("message", "the turn failed") if isinstance(error, dict) else ""
            raise RpcError(RpcErrorCode.INTERNAL_ERROR, message or "the turn failed", error)
        if reason not in _V1_STOP_REASONS:
            self._report(
                Diagnostic(
                    code="v1.stop-reason",
                    message=f"stop reason {reason!r} has no v1 value: sent as 'end_turn'",
                    subject=params.session_id,
                )
            )
            reason = "end_turn"
        return v1.PromptResponse(stop_reason=cast(Any, reason))  # a v1 value, checked above

    async def on_load(self, params: v1.LoadSessionRequest) -> v1.LoadSessionResponse:
        """v1 ``session/load``: a v2 resume with replay, through a fresh adapter."""
        self._adapter(params.session_id, fresh=True)
        wire = _v1_converter.dump(params) | {"replayFrom": {"type": "start"}}
        request = _convert(wire, v2.ResumeSessionRequest, to_v1=False, report=self._report)
        await self._v2[_RESUME](request)
        return v1.LoadSessionResponse()

    async def request(self, send: Send, target: Any, params: Any) -> Any:
        """Send a v2 request to the v1 client."""
        method, params = _v2_target(target, params, "request")
        if method != _PERMISSION:
            return await self._plain_request(send, method, params)
        request = _convert(
            self._permission_to_v1(params),
            v1.RequestPermissionRequest,
            to_v1=True,
            report=self._report,
        )
        response = await send(request)
        return _convert(response, v2.RequestPermissionResponse, to_v1=False, report=self._report)

    def _permission_to_v1(self, params: v2.RequestPermissionRequest) -> dict[str, Any]:
        """The v1 wire params of a v2 permission request.

        v1 has no ``title`` or ``description`` of its own: a v1 client shows the
        ``toolCall``'s title. A request without a tool call sends the title as
        that of its placeholder ``toolCall``; what v1 cannot hold otherwise (a
        title other than the tool call's, the description, a subject that is not
        a tool call) is reported as ``v1.permission-lossy``.
        """
        call: dict[str, Any] = {"toolCallId": ""}
        subject, shown = params.subject, None
        if isinstance(subject, v2.ToolCallRequestPermissionSubject):
            adapter = self._adapter(params.session_id)
            wire = _v2_converter.dump(subject.tool_call) | {"sessionUpdate": "tool_call_update"}
            update = _v2_converter.load(wire, v2.SessionUpdate)
            converted = adapter.convert(update, session_id=params.session_id)
            self._drain(adapter)
            if converted:
                call = _v1_converter.dump(converted[0])
                call.pop("sessionUpdate", None)
            state = adapter.state(params.session_id)
            stored = None if state is None else state.tool_calls.get(call["toolCallId"])
            shown = call.get("title") if stored is None else stored.title
        elif params.title:
            shown = call["title"] = params.title
        lost = [] if shown == params.title else [f"title {params.title!r}"]
        if params.description:
            lost.append(f"description {params.description!r}")
        if subject is not None and not isinstance(subject, v2.ToolCallRequestPermissionSubject):
            lost.append(f"the subject of type {getattr(subject, 'type', '?')!r}")
        if lost:
            self._report(
                Diagnostic(
                    code="v1.permission-lossy",
                    message=f"a v1 permission request has no place for {', '.join(lost)}: "
                    "not sent (v1 shows the tool call's title)",
                    subject=params.session_id,
                )
            )
        wire = {"sessionId": params.session_id, "toolCall": call}
        wire["options"] = [_v2_converter.dump(option) for option in params.options]
        if params.meta is not None:
            wire["_meta"] = params.meta
        return wire

    async def notify(self, send: Send, target: Any, params: Any) -> None:
        """Send a v2 notification to the v1 client (``session/update`` through the adapter)."""
        method, params = _v2_target(target, params, "notification")
        if method != _UPDATE:
            spec = _v1_spec(method, "notification")
            await send(_convert(params, spec.params, to_v1=True, report=self._report))
            return
        update = params.update
        if isinstance(update, v2.StateUpdateSessionUpdate):  # v1: the prompt response says it
            state = _v2_converter.load(update.extra or {}, v2.StateUpdate)
            if isinstance(state, v2.IdleStateUpdate):
                self._ends[params.session_id] = state
            return
        adapter = self._adapter(params.session_id)
        converted = adapter.convert_notification(params)
        self._drain(adapter)
        for notification in converted:
            await send(notification)
