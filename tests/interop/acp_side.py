"""agentproto's side of the ACP interop tests: one scenario agent and one scenario client.

Both are written against :mod:`agentproto.acp.connection` directly (the
lifecycle API will replace the hand-written parts later; keep them here, in one
place). The agent plays ``acp_peers/scenario.json`` as the TypeScript agent does;
the client drives any agent through the same scenario: a prompt turn with a
plan, a tool call that asks permission and shows a diff, a terminal; a second
turn it cancels while the agent's permission request is pending (answering that
request ``cancelled``); then it closes the session and resumes it with replay
into a fresh :class:`~agentproto.acp.SessionState`.

Each side reports its view of the session in the shape ``acp_peers/view.mjs``
prints (:func:`view_of`), so the tests can compare the two sides.

ACP v1 peers. ``initialize`` decides the version, but a connection is built for
one version up front (``protocol=``) and has no v1 mode that speaks v2 to the
application. Until it has, this module stands in for it (see
:func:`negotiate_client` and :func:`agent_connection`): the initialize exchange
is read before the connection is built, and the scenario code translates
``session/update`` with :class:`~agentproto.acp.V1ToV2Adapter` /
:class:`~agentproto.acp.V2ToV1Adapter` and maps the few v1 methods by hand.

Run the agent on stdio with ``python -m tests.interop.acp_side VIEW_PATH``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentproto.acp import (
    MessageReader,
    Request,
    Response,
    SessionState,
    V1ToV2Adapter,
    V2ToV1Adapter,
    encode_message,
    make_converter,
    make_v1_converter,
    parse_session_update,
)
from agentproto.acp import schema as v2
from agentproto.acp import schema_v1 as v1
from agentproto.acp._transports import AgentProcess, stdio_streams
from agentproto.acp.connection import AgentSideConnection, ClientSideConnection, Connection

PEERS = Path(__file__).with_name("acp_peers")
SCENARIO: dict[str, Any] = json.loads((PEERS / "scenario.json").read_text("utf-8"))
CLIENT_INFO = {"name": "agentproto-interop-client", "version": "0.1.0"}
AGENT_INFO = {"name": "agentproto-interop-agent", "version": "0.1.0"}
CONVERTERS = {1: make_v1_converter(), 2: make_converter()}
# what both sides of every pair must report once the scenario ran
METHODS = ["initialize", "session/new", "session/prompt", "session/prompt", "session/cancel"]
METHODS += ["session/close"]  # then the replaying method: v2 session/resume, v1 session/load
PERMISSIONS = [
    {"toolCallId": "c1", "outcome": "allow"},
    {"toolCallId": "c3", "outcome": "cancelled"},
]
STOP_REASONS = ["end_turn", "cancelled"]


# ---- the normalized view (the shape of acp_peers/view.mjs) --------------------------------


def summary(item: dict[str, Any]) -> dict[str, Any]:
    """A version-neutral summary of one tool call content item (wire JSON)."""
    kind = item.get("type")
    if kind == "content":
        return {"type": "text", "text": item.get("content", {}).get("text")}
    if kind == "diff":
        paths = [c["path"] for c in item["changes"]] if "changes" in item else [item["path"]]
        return {"type": "diff", "paths": paths}
    if kind == "terminal":
        return {"type": "terminal", "terminalId": item["terminalId"]}
    return {"type": kind}


def _text(blocks: list[dict[str, Any]]) -> str:
    return "".join(b["text"] for b in blocks if b.get("type") == "text")


def view_of(state: SessionState) -> dict[str, Any]:
    """The normalized view of a session, from agentproto's own fold of it."""
    view: dict[str, Any] = {"toolCalls": {}, "plans": {}, "messages": [], "terminals": {}}
    view |= {"state": None, "unhandled": []}
    for key, entity in state.to_json()["entities"].items():
        kind, _, ident = key.partition(":")
        if kind == "tool_call":
            view["toolCalls"][ident] = {
                "title": entity.get("title"),
                "kind": entity["kind"],
                "status": entity["status"],
                "content": [summary(item) for item in entity.get("content", [])],
                "locations": [loc["path"] for loc in entity.get("locations", [])],
            }
        elif kind == "plan":
            view["plans"][ident] = entity["plan"]["entries"]
        elif kind in ("user_message", "agent_message", "agent_thought"):
            view["messages"].append({"kind": kind, "id": ident, "text": _text(entity["content"])})
        elif kind == "terminal":
            view["terminals"][ident] = {
                "command": entity.get("command"),
                "output": state.terminals[ident].output.decode(),
                "exitCode": entity.get("exitStatus", {}).get("exitCode"),
            }
        elif kind == "state":
            view["state"] = {"state": entity["state"], "stopReason": entity.get("stopReason")}
        else:
            view["unhandled"].append(kind)
    return view


# ---- the version stand-ins (what the connection layer lacks) ------------------------------


class _Prefixed:
    """A reader that returns ``prefix`` first, then what ``reader`` reads."""

    def __init__(self, prefix: bytes, reader: asyncio.StreamReader) -> None:
        self._prefix = prefix
        self._reader = reader

    async def read(self, n: int = -1) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix, b""
            return data
        return await self._reader.read(n)


def _one_message(line: bytes) -> Any:
    reader = MessageReader()
    messages = [*reader.feed(line), *reader.close()]
    if len(messages) != 1:
        raise AssertionError(f"expected one JSON-RPC message, got {line!r}")
    return messages[0]


async def agent_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> tuple[AgentSideConnection, int]:
    """An agent connection for the version the client's ``initialize`` asks for.

    The first line is read before the connection exists (and handed to it
    unchanged), because a connection cannot switch to v1 after ``initialize``.
    """
    first = await reader.readline()
    message = _one_message(first)
    params = message.params if isinstance(message, Request) else None
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    protocol = 1 if requested == 1 else 2
    return AgentSideConnection(_Prefixed(first, reader), writer, protocol=protocol), protocol


async def negotiate_client(
    process: asyncio.subprocess.Process, **options: Any
) -> tuple[AgentProcess, int, Any]:
    """Send a v2 ``initialize`` by hand; build the client connection for the answer.

    Args:
        process: an agent subprocess with piped stdin and stdout.
        **options: for the :class:`ClientSideConnection`.

    Returns:
        The process with a connection for the negotiated version (not started),
        the version, and the typed initialize result of that version.
    """
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None
    params = {"protocolVersion": 2, "info": CLIENT_INFO, "capabilities": {}}
    stdin.write(encode_message(Request("initialize", "initialize", params)))
    await stdin.drain()
    response = _one_message(await asyncio.wait_for(stdout.readline(), 30))
    if not isinstance(response, Response) or response.error is not None:
        raise AssertionError(f"initialize failed: {response!r}")
    protocol = 1 if response.result.get("protocolVersion") == 1 else 2
    module = v1 if protocol == 1 else v2
    result = CONVERTERS[protocol].load(response.result, module.InitializeResponse)
    connection = ClientSideConnection(stdout, stdin, protocol=protocol, **options)
    return AgentProcess(connection, process), protocol, result


# ---- the agent ----------------------------------------------------------------------------


class ScenarioAgent:
    """agentproto's scenario agent: plays ``scenario.json`` over one connection.

    Its view is what it sent, folded into a :class:`SessionState` (v2: what the
    application sent, before any v1 translation).
    """

    def __init__(self, conn: Connection, protocol: int) -> None:
        self.conn = conn
        self.protocol = protocol
        self.state = SessionState()
        self.history: list[Any] = []
        self.record: dict[str, list[Any]] = {"permissions": [], "stopReasons": [], "methods": []}
        self.record |= {"errors": [], "diagnostics": []}
        self.cancelled = asyncio.Event()
        self.to_v1 = V2ToV1Adapter() if protocol == 1 else None
        self.adapters: list[V2ToV1Adapter] = []
        self.turns = 0
        self.last_stop: str | None = None
        handlers: dict[str, Callable[[Any], Awaitable[Any]]] = {
            "initialize": self.initialize,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/cancel": self.cancel,
            "session/close": self.close,
            # v1 replays on session/load; v2 on session/resume with a replay cursor
            "session/load" if protocol == 1 else "session/resume": self.resume,
        }
        for method, handler in handlers.items():
            conn.handle(method, self._recorded(method, handler))

    def _recorded(
        self, method: str, handler: Callable[[Any], Awaitable[Any]]
    ) -> Callable[[Any], Awaitable[Any]]:
        async def run(params: Any) -> Any:
            self.record["methods"].append(method)
            return await handler(params)

        return run

    def _module(self) -> Any:
        return v1 if self.protocol == 1 else v2

    async def initialize(self, params: Any) -> Any:
        if self.protocol == 1:
            capabilities = v1.AgentCapabilities(load_session=True)
            return v1.InitializeResponse(
                protocol_version=1,
                agent_capabilities=capabilities,
                agent_info=v1.Implementation(**AGENT_INFO),
            )
        return v2.InitializeResponse(
            protocol_version=min(params.protocol_version, 2),
            info=v2.Implementation(**AGENT_INFO),
            capabilities=v2.AgentCapabilities(),
        )

    async def new_session(self, params: Any) -> Any:
        self.state.session_id = "agentproto-session-1"
        return self._module().NewSessionResponse(session_id=self.state.session_id)

    async def send(self, session_id: str, wire: dict[str, Any], *, retain: bool = True) -> None:
        """Send one v2 update (translated to v1 for a v1 client) and fold it into the view."""
        update = parse_session_update(wire)
        self.state.apply(update)
        if retain:
            self.history.append(update)
        await self._deliver(session_id, update)

    async def _deliver(self, session_id: str, update: Any) -> None:
        notification = v2.UpdateSessionNotification(session_id=session_id, update=update)
        if self.to_v1 is None:
            await self.conn.notify(notification)
            return
        for converted in self.to_v1.convert_notification(notification):
            await self.conn.notify(converted)

    async def ask(self, session_id: str, step: dict[str, Any]) -> None:
        """Ask permission for a tool call; check the answer the scenario expects."""
        ident, expect = step["toolCallId"], step["expect"]
        params: dict[str, Any] = {"sessionId": session_id, "options": SCENARIO["options"]}
        if self.protocol == 1:  # v1: the tool call itself is the subject, and required
            params["toolCall"] = {"toolCallId": ident}
        else:
            params |= {"title": step["title"]}
            params["subject"] = {"type": "tool_call", "toolCall": {"toolCallId": ident}}
        request = self.conn.request("session/request_permission", params)
        waits = [request, self.cancelled.wait()] if expect == "cancelled" else [request]
        response, *_ = await asyncio.gather(*waits)
        outcome = response.outcome
        seen = getattr(outcome, "option_id", None) or outcome.outcome
        self.record["permissions"].append({"toolCallId": ident, "outcome": seen})
        if seen != expect:
            self.record["errors"].append(f"{ident}: permission answered {seen}, not {expect}")

    async def play(self, session_id: str, steps: list[dict[str, Any]]) -> None:
        for step in steps:
            if "send" in step:
                await self.send(session_id, step["send"])
            elif "ask" in step:
                await self.ask(session_id, step["ask"])
            else:
                idle = {"sessionUpdate": "state_update", "state": "idle"}
                await self.send(session_id, idle | {"stopReason": step["idle"]}, retain=False)
                self.record["stopReasons"].append(step["idle"])
                self.last_stop = step["idle"]

    async def prompt(self, params: Any) -> Any:
        self.turns += 1
        message_id = f"u{self.turns}"
        text = "".join(getattr(block, "text", "") for block in params.prompt)
        steps = SCENARIO["turns"][text]
        prompt = [CONVERTERS[self.protocol].dump(block) for block in params.prompt]
        sid = params.session_id
        await self.send(sid, {"sessionUpdate": "state_update", "state": "running"}, retain=False)
        await self.send(
            sid, {"sessionUpdate": "user_message", "messageId": message_id} | {"content": prompt}
        )
        await self.play(sid, steps)
        if self.protocol == 1:  # v1 ends a turn with the response; v2 with the idle state
            return v1.PromptResponse(stop_reason=self.last_stop or "end_turn")
        return v2.PromptResponse(message_id=message_id)

    async def cancel(self, params: Any) -> None:
        self.cancelled.set()

    async def close(self, params: Any) -> Any:
        return self._module().CloseSessionResponse()

    async def resume(self, params: Any) -> Any:
        replay = self.protocol == 1 or isinstance(params.replay_from, v2.StartReplayFrom)
        if self.to_v1 is not None:
            # the v1 client rebuilds its view from nothing: the adapter must not remember
            # the tool calls and messages it already sent (it has no per-session reset)
            self.adapters.append(self.to_v1)
            self.to_v1 = V2ToV1Adapter()
        if replay:
            for update in self.history:
                await self._deliver(params.session_id, update)
        if self.protocol == 1:
            return v1.LoadSessionResponse()
        # the current-state snapshot a resume sends after replay, before its response
        snapshot = {"sessionUpdate": "state_update", "state": "idle", "stopReason": self.last_stop}
        await self._deliver(params.session_id, parse_session_update(snapshot))
        return v2.ResumeSessionResponse()

    def report(self) -> dict[str, Any]:
        adapters = self.adapters if self.to_v1 is None else [*self.adapters, self.to_v1]
        diagnostics = [d for adapter in adapters for d in adapter.diagnostics]
        self.record["diagnostics"] = [f"{d.code}: {d.message}" for d in diagnostics]
        return {"view": view_of(self.state), "state": self.state.to_json(), **self.record}


# ---- the client ---------------------------------------------------------------------------


def _wire(update: Any) -> dict[str, Any]:
    out: dict[str, Any] = CONVERTERS[2].dump(update)
    return out


class ScenarioClient:
    """agentproto's scenario client: folds what the agent sends, answers permissions.

    A v1 agent's updates (and the tool call of its permission requests) are
    translated to v2 with a :class:`V1ToV2Adapter` first; the replay after
    ``session/load`` gets a fresh adapter, as it rebuilds a fresh state.
    """

    def __init__(self, conn: Connection, protocol: int, diagnostics: list[Any]) -> None:
        self.conn = conn
        self.protocol = protocol
        self.live = SessionState()
        self.replayed = SessionState()
        self.target = self.live
        self.to_v2 = V1ToV2Adapter() if protocol == 1 else None
        self.adapters = [] if self.to_v2 is None else [self.to_v2]
        self.diagnostics = diagnostics
        self.record: dict[str, list[Any]] = {"permissions": [], "stopReasons": []}
        self.cancel_next = False
        self.idle = asyncio.Event()
        conn.handle("session/update", self.on_update)
        conn.handle("session/request_permission", self.on_permission)

    def _to_v2(self, session_id: str, update: Any) -> list[Any]:
        if self.to_v2 is None:
            return [update]
        return self.to_v2.convert(update, session_id=session_id)

    async def on_update(self, params: Any) -> None:
        for update in self._to_v2(params.session_id, params.update):
            self.target.apply(update)
            wire = _wire(update)
            if wire["sessionUpdate"] == "state_update" and wire.get("state") == "idle":
                if self.target is self.live:  # a resume snapshot is not a new completion
                    self.record["stopReasons"].append(wire.get("stopReason"))
                self.idle.set()

    async def on_permission(self, params: Any) -> Any:
        module = v1 if self.protocol == 1 else v2
        if self.protocol == 1:  # v1: the subject is the tool call, a tool_call_update in v2
            wire = CONVERTERS[1].dump(params.tool_call) | {"sessionUpdate": "tool_call_update"}
            update = CONVERTERS[1].load(wire, v1.SessionUpdate)
            for converted in self._to_v2(params.session_id, update):
                self.target.apply(converted)
            ident = params.tool_call.tool_call_id
        else:
            self.target.apply_permission_request(params)
            ident = params.subject.tool_call.tool_call_id
        if self.cancel_next:  # cancel the turn first, then answer the pending request
            await self.conn.notify("session/cancel", {"sessionId": params.session_id})
            self._mark_cancelled()
            self.record["permissions"].append({"toolCallId": ident, "outcome": "cancelled"})
            return module.RequestPermissionResponse(
                outcome=module.CancelledRequestPermissionOutcome()
            )
        self.record["permissions"].append({"toolCallId": ident, "outcome": "allow"})
        outcome = module.SelectedRequestPermissionOutcome(option_id="allow")
        return module.RequestPermissionResponse(outcome=outcome)

    def _mark_cancelled(self) -> None:
        """The client's duty on cancelling: its unfinished tool calls show as cancelled.

        (A stand-in for the lifecycle API, which will own this rule.)
        """
        for ident, call in self.live.tool_calls.items():
            if call.status in ("pending", "in_progress"):
                update = {"sessionUpdate": "tool_call_update", "toolCallId": ident}
                self.live.apply(parse_session_update(update | {"status": "cancelled"}))

    async def turn(self, session_id: str, text: str) -> None:
        """One prompt turn, until it ends (v1: the response; v2: the idle state update)."""
        module = v1 if self.protocol == 1 else v2
        self.idle.clear()
        prompt = module.PromptRequest(
            session_id=session_id, prompt=[module.TextContentBlock(text=text)]
        )
        response = await self.conn.request(prompt)
        if self.protocol == 1:
            self.record["stopReasons"].append(response.stop_reason)
        else:
            await asyncio.wait_for(self.idle.wait(), 30)

    async def resume(self, session_id: str) -> None:
        """Close the session, then replay it into :attr:`replayed` (v1: ``session/load``)."""
        module = v1 if self.protocol == 1 else v2
        await self.conn.request(module.CloseSessionRequest(session_id=session_id))
        self.target = self.replayed
        self.idle.clear()
        cwd = SCENARIO["cwd"]
        if self.protocol == 1:
            self.to_v2 = V1ToV2Adapter()
            self.adapters.append(self.to_v2)
            await self.conn.request(
                v1.LoadSessionRequest(session_id=session_id, cwd=cwd, mcp_servers=[])
            )
        else:
            replay = v2.StartReplayFrom()
            await self.conn.request(
                v2.ResumeSessionRequest(session_id=session_id, cwd=cwd, replay_from=replay)
            )
            await asyncio.wait_for(self.idle.wait(), 30)  # the snapshot precedes the response
        self.target = self.live

    async def run(self) -> str:
        """The whole scenario; returns the session id."""
        module = v1 if self.protocol == 1 else v2
        new = module.NewSessionRequest(cwd=SCENARIO["cwd"], mcp_servers=[])
        session_id: str = (await self.conn.request(new)).session_id
        await self.turn(session_id, "go")
        self.cancel_next = True
        await self.turn(session_id, "cancel me")
        self.cancel_next = False
        await self.resume(session_id)
        return session_id

    def report(self) -> dict[str, Any]:
        diagnostics = [d for adapter in self.adapters for d in adapter.diagnostics]
        diagnostics += self.diagnostics + self.live.diagnostics + self.replayed.diagnostics
        return {
            "view": view_of(self.live),
            "replayed": view_of(self.replayed),
            "state": self.live.to_json(),
            "replayedState": self.replayed.to_json(),
            "diagnostics": [f"{d.code}: {d.message}" for d in diagnostics],
            **self.record,
        }


async def drive_agent(command: list[str]) -> tuple[dict[str, Any], int]:
    """Spawn an agent, run the scenario against it; agentproto's report and the version."""
    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    diagnostics: list[Any] = []
    spawned, protocol, _ = await negotiate_client(
        process, request_timeout=30, on_diagnostic=diagnostics.append
    )
    client = ScenarioClient(spawned.connection, protocol, diagnostics)
    async with spawned:
        await asyncio.wait_for(client.run(), 60)
    return client.report(), protocol


async def serve_stdio(view_path: str) -> None:
    """Serve one client on this process's stdio; write the agent's report at the end."""
    conn, protocol = await agent_connection(*await stdio_streams())
    agent = ScenarioAgent(conn, protocol)
    async with conn:
        await conn.wait_closed()
    Path(view_path).write_text(json.dumps(agent.report(), indent=1), "utf-8")


if __name__ == "__main__":
    asyncio.run(serve_stdio(sys.argv[1]))
