"""agentproto's side of the ACP interop tests: one scenario agent and one scenario client.

Both are written against the lifecycle API, as an application would write them:
the agent is an :class:`~agentproto.acp.Agent` served by an
:class:`~agentproto.acp.AgentRunner`, the client an
:class:`~agentproto.acp.AcpClient` with its :class:`~agentproto.acp.ClientHandlers`.
The agent plays ``acp_peers/scenario.json`` as the TypeScript agent does; the
client drives any agent through the same scenario: a prompt turn with a plan, a
tool call that asks permission and shows a diff, a terminal; a second turn it
cancels while the agent's permission request is pending (a v2 agent then cancels
that request with ``$/cancel_request`` and the client answers it ``cancelled``;
agentproto's agent does so too); then it closes the session and resumes it with
replay into a fresh :class:`~agentproto.acp.SessionState`.

Each side reports its view of the session in the shape ``acp_peers/view.mjs``
prints (:func:`view_of`), so the tests can compare the two sides.

ACP v1 peers. Both sides are v2 application code only: ``initialize`` decides
the version, and with a v1 peer the lifecycle's own v1 mode
(:mod:`agentproto.acp._io.v1bridge`) speaks v1 on the wire: it translates
``session/update`` and permission requests, ends a v1 turn with the prompt
response, and maps v1 ``session/load`` to a v2 resume with replay.

Run the agent on stdio with ``python -m tests.interop.acp_side VIEW_PATH``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import agentproto
from agentproto import Diagnostic
from agentproto.acp import (
    AcpClient,
    Agent,
    AgentSession,
    ClientHandlers,
    ClientSession,
    SessionState,
    acp_app,
    make_converter,
    parse_session_update,
    serve_agent,
)
from agentproto.acp import schema as v2

PEERS = Path(__file__).with_name("acp_peers")
SCENARIO: dict[str, Any] = json.loads((PEERS / "scenario.json").read_text("utf-8"))
CLIENT_INFO = v2.Implementation(name="agentproto-interop-client", version="0.1.0")
AGENT_INFO = v2.Implementation(name="agentproto-interop-agent", version="0.1.0")
CONVERTER = make_converter()
OPTIONS = [CONVERTER.load(option, v2.PermissionOption) for option in SCENARIO["options"]]
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


# ---- the agent ----------------------------------------------------------------------------


class ScenarioAgent(Agent):
    """agentproto's scenario agent: plays ``scenario.json`` through the lifecycle API.

    Its view is what it sent, as its :class:`AgentSession` folded it (v2: what the
    application sent, before any v1 translation). The runner reports ``running``,
    echoes the prompt as a ``user_message``, reports ``requires_action`` while a
    permission request waits, and ends each turn with the ``idle`` update of the
    stop reason :meth:`prompt` returns; a resume replays the session's entities.
    """

    info = AGENT_INFO

    def __init__(self) -> None:
        self.session: AgentSession | None = None
        self.record: dict[str, list[Any]] = {"permissions": [], "stopReasons": [], "methods": []}
        self.record |= {"errors": [], "diagnostics": []}
        self.cancelled = asyncio.Event()

    def _called(self, method: str) -> None:
        self.record["methods"].append(method)

    async def initialize(self, request: v2.InitializeRequest, version: int) -> Any:
        self._called("initialize")
        return await super().initialize(request, version)

    async def new_session(self, session: AgentSession, request: v2.NewSessionRequest) -> None:
        self._called("session/new")
        self.session = session

    async def ask(self, session: AgentSession, step: dict[str, Any]) -> None:
        """Ask permission for a tool call; check the answer the scenario expects."""
        ident, expect = step["toolCallId"], step["expect"]
        call = v2.ToolCallUpdate(tool_call_id=ident)
        request = session.request_permission(step["title"], OPTIONS, tool_call=call)
        waits = [request, self.cancelled.wait()] if expect == "cancelled" else [request]
        decision, *_ = await asyncio.gather(*waits)
        seen = decision.option.option_id if decision.option is not None else None
        seen = seen or decision.outcome.outcome
        self.record["permissions"].append({"toolCallId": ident, "outcome": seen})
        if seen != expect:
            self.record["errors"].append(f"{ident}: permission answered {seen}, not {expect}")

    async def prompt(self, session: AgentSession, request: v2.PromptRequest) -> str | None:
        self._called("session/prompt")
        text = "".join(getattr(block, "text", "") for block in request.prompt)
        for step in SCENARIO["turns"][text]:
            if "send" in step:
                await session.emit(parse_session_update(step["send"]))
            elif "ask" in step:
                await self.ask(session, step["ask"])
            else:  # the runner sends the idle update with the stop reason returned
                self.record["stopReasons"].append(step["idle"])
                return str(step["idle"])
        self.record["errors"].append(f"turn {text!r} has no idle step")
        return None

    async def cancel(self, session: AgentSession) -> None:
        # the scenario goes on (its pending permission request is answered `cancelled`)
        # instead of the default, which cancels the turn's task
        self._called("session/cancel")
        self.cancelled.set()

    async def close_session(self, session: AgentSession) -> None:
        self._called("session/close")

    async def resume_session(self, session: AgentSession, request: v2.ResumeSessionRequest) -> None:
        # a v1 client's session/load reaches the application as a resume with replay
        self._called("session/load" if self.runner.version == 1 else "session/resume")

    def report(self) -> dict[str, Any]:
        state = SessionState() if self.session is None else self.session.state
        report = {"view": view_of(state), "state": state.to_json(), **self.record}
        # which agentproto served: the tests check it is the tree under test
        return report | {"agentproto": str(Path(agentproto.__file__).resolve())}


# ---- the client ---------------------------------------------------------------------------


class ScenarioHandlers(ClientHandlers):
    """agentproto's scenario client's answers: allow, or cancel the turn.

    Cancelling, with a v2 agent: send ``session/cancel`` and leave the pending request
    to the agent, which cancels it with ``$/cancel_request`` (the schema's SHOULD);
    the client then answers it ``cancelled`` (recorded in :attr:`cancel_requests`).
    With a v1 agent: :meth:`AcpClient.cancel`, which answers it ``cancelled`` at once
    (v1: the client answers the cancelled turn's pending requests itself).
    """

    def __init__(self) -> None:
        self.client: AcpClient | None = None
        self.cancel_next = False
        self.permissions: list[dict[str, Any]] = []
        self.cancel_requests: list[str] = []
        self.errors: list[str] = []

    async def on_permission(
        self, session: ClientSession, request: v2.RequestPermissionRequest
    ) -> str | None:
        subject = request.subject
        assert isinstance(subject, v2.ToolCallRequestPermissionSubject), subject
        ident = subject.tool_call.tool_call_id
        if not self.cancel_next:
            self.permissions.append({"toolCallId": ident, "outcome": "allow"})
            return "allow"
        client = self.client
        assert client is not None and client.agent is not None
        self.permissions.append({"toolCallId": ident, "outcome": "cancelled"})
        if client.agent.protocol_version == 1:
            await client.cancel(session.session_id)
            return None
        cancel = v2.CancelSessionNotification(session_id=session.session_id)
        await client.connection.notify(cancel)
        try:
            await asyncio.sleep(10)  # until the agent's $/cancel_request cancels this handler
        except asyncio.CancelledError:
            self.cancel_requests.append(ident)
            raise
        self.errors.append(f"{ident}: no $/cancel_request within 10 s after session/cancel")
        return None


class ScenarioClient:
    """agentproto's scenario client: drives the scenario through an :class:`AcpClient`.

    The client folds what the agent sends into one state per session; resuming
    with replay gives the session a fresh state, which :attr:`replayed` keeps
    next to the live one. With a v1 agent the lifecycle's v1 mode translates.
    """

    def __init__(self, client: AcpClient, handlers: ScenarioHandlers) -> None:
        self.client = client
        self.handlers = handlers
        handlers.client = client
        self.live: ClientSession | None = None
        self.replayed: ClientSession | None = None
        self.stop_reasons: list[str | None] = []

    async def run(self) -> str:
        """The whole scenario; returns the session id."""
        client, cwd = self.client, SCENARIO["cwd"]
        await client.initialize(info=CLIENT_INFO, timeout=30)
        self.live = await client.new_session(cwd, mcp_servers=[])
        session_id = self.live.session_id
        for text, cancel in (("go", False), ("cancel me", True)):
            self.handlers.cancel_next = cancel
            self.stop_reasons.append(await client.prompt(session_id, text, timeout=30))
        self.handlers.cancel_next = False
        await client.close_session(session_id)
        self.replayed = await client.resume_session(session_id, cwd, replay=True)
        return session_id

    def report(self) -> dict[str, Any]:
        live = self.live.state if self.live is not None else SessionState()
        replayed = self.replayed.state if self.replayed is not None else SessionState()
        diagnostics = [*self.client.diagnostics, *live.diagnostics, *replayed.diagnostics]
        return {
            "view": view_of(live),
            "replayed": view_of(replayed),
            "state": live.to_json(),
            "replayedState": replayed.to_json(),
            "diagnostics": [f"{d.code}: {d.message}" for d in diagnostics],
            "permissions": self.handlers.permissions,
            "cancelRequests": self.handlers.cancel_requests,
            "errors": self.handlers.errors,
            "stopReasons": self.stop_reasons,
        }


class ServedAgents:
    """``acp_app``'s agent factory for the remote interop tests: each connection's
    :class:`ScenarioAgent` is kept, its runner's diagnostics in its record;
    :meth:`last_report` is the report its stdio run writes."""

    def __init__(self) -> None:
        self.made: list[ScenarioAgent] = []

    def __call__(self) -> ScenarioAgent:
        self.made.append(ScenarioAgent())
        return self.made[-1]

    def note(self, found: Diagnostic) -> None:
        self.made[-1].record["diagnostics"].append(f"{found.code}: {found.message}")

    def app(self) -> Any:
        """The ASGI app serving them."""
        return acp_app(self, on_diagnostic=self.note)

    def last_report(self) -> dict[str, Any]:
        return self.made[-1].report()


async def drive_agent(command: list[str] | str) -> tuple[dict[str, Any], int]:
    """Spawn an agent (or connect to the one a URL names), run the scenario against it;
    agentproto's report and the version."""
    handlers = ScenarioHandlers()
    if isinstance(command, str):
        client = AcpClient.connect_url(command, handlers, request_timeout=30)
    else:
        client = await AcpClient.spawn(command, handlers, request_timeout=30)
    scenario = ScenarioClient(client, handlers)
    async with client:
        await asyncio.wait_for(scenario.run(), 60)
    assert client.agent is not None
    return scenario.report(), client.agent.protocol_version


async def serve_stdio(view_path: str) -> None:
    """Serve one client on this process's stdio; write the agent's report at the end."""
    agent = ScenarioAgent()
    diagnostics = agent.record["diagnostics"]
    await serve_agent(agent, on_diagnostic=lambda d: diagnostics.append(f"{d.code}: {d.message}"))
    Path(view_path).write_text(json.dumps(agent.report(), indent=1), "utf-8")


if __name__ == "__main__":
    asyncio.run(serve_stdio(sys.argv[1]))
