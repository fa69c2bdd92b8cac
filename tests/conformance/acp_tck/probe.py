"""One target's agent processes and the scenarios the checks share.

A :class:`Probe` starts the target's main process once (``initialize`` with
``capabilities.auth.terminal`` and no elicitation mode) and runs each scenario at most
once (a prompt turn, a cancelled turn, a resume with replay, ...), so one process
serves every check whose requirement allows it. Checks that need another handshake, or
send input meant to break things, get processes of their own (:meth:`Probe.fresh`,
:attr:`Probe.abuse`).
"""

from __future__ import annotations

import functools
import json
import tempfile
from dataclasses import dataclass, field
from typing import Any

from tests.conformance.acp_tck.harness import (
    QUIET,
    TIMEOUT,
    AgentProcess,
    Message,
    MockClient,
    NoAnswer,
    is_request,
    is_response,
)
from tests.conformance.acp_tck.targets import Target

CLIENT_INFO = {"name": "agentproto-acp-tck", "version": "1"}
FULL_CLIENT_CAPS: Message = {"auth": {"terminal": {}}}
TURN_TIMEOUT = 5.0
STARTUP_TIMEOUT = 15.0
"""How long a new process may take to answer ``initialize`` (imports on a busy machine)."""


def initialize_params(version: int = 2, capabilities: Message | None = None) -> Message:
    """``initialize`` params of the mock client."""
    return {
        "protocolVersion": version,
        "info": CLIENT_INFO,
        "capabilities": FULL_CLIENT_CAPS if capabilities is None else capabilities,
    }


def update_of(message: Any, session_id: str | None = None) -> Message | None:
    """The ``update`` of a ``session/update`` notification (for ``session_id`` if given)."""
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return None
    params = message.get("params")
    if not isinstance(params, dict) or not isinstance(params.get("update"), dict):
        return None
    if session_id is not None and params.get("sessionId") != session_id:
        return None
    update: Message = params["update"]
    return update


def is_idle(message: Any, session_id: str) -> bool:
    """An idle ``state_update`` for ``session_id``."""
    update = update_of(message, session_id)
    return (
        update is not None
        and update.get("sessionUpdate") == "state_update"
        and update.get("state") == "idle"
    )


@dataclass
class Turn:
    """One ``session/prompt`` and what the agent sent until its turn went idle."""

    session_id: str
    response: Message | None
    messages: list[Any] = field(default_factory=list)
    idle: Message | None = None
    """The idle ``state_update`` that ended it (``None``: none within the budget)."""

    @property
    def updates(self) -> list[Message]:
        """The session's updates during the turn."""
        return [u for m in self.messages if (u := update_of(m, self.session_id)) is not None]

    @property
    def requests(self) -> list[Message]:
        """The agent's requests during the turn."""
        return [m for m in self.messages if is_request(m)]

    @property
    def message_id(self) -> Any:
        result = (self.response or {}).get("result")
        return result.get("messageId") if isinstance(result, dict) else None


class Probe:
    """One target under test."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.processes: list[AgentProcess] = []
        self.cwd = tempfile.mkdtemp(prefix="acp-tck-cwd-")
        self.main = self.start()
        try:
            self.init = self.main.request(
                "initialize", initialize_params(), timeout=STARTUP_TIMEOUT
            )
        except NoAnswer:
            self.close()
            raise
        self.main.version = (self.init.get("result") or {}).get("protocolVersion")
        self.turns: list[Turn] = []
        self.memo: dict[str, Any] = {}

    # ---- processes ------------------------------------------------------------------

    def start(self, client: MockClient | None = None) -> AgentProcess:
        process = AgentProcess(self.target.argv(), env=self.target.env(), client=client)
        self.processes.append(process)
        return process

    def fresh(
        self, version: int = 2, capabilities: Message | None = None
    ) -> tuple[AgentProcess, Message]:
        """A new process and its ``initialize`` response."""
        process = self.start()
        response = process.request(
            "initialize", initialize_params(version, capabilities), timeout=STARTUP_TIMEOUT
        )
        process.version = (response.get("result") or {}).get("protocolVersion")
        return process, response

    @functools.cached_property
    def abuse(self) -> AgentProcess:
        """An initialized process for input meant to break the agent."""
        process, _ = self.fresh()
        return process

    def close(self) -> None:
        for process in self.processes:
            process.close_stdin(1.0)

    # ---- what the agent advertised ---------------------------------------------------

    @property
    def init_result(self) -> Message:
        result = self.init.get("result")
        return result if isinstance(result, dict) else {}

    def advertises(self, path: str) -> bool:
        """Whether the dotted ``path`` of the ``initialize`` result is present, not null."""
        node: Any = self.init_result
        for part in path.split("."):
            if not isinstance(node, dict) or node.get(part) is None:
                return False
            node = node[part]
        return True

    @property
    def auth_methods(self) -> list[Any]:
        methods = self.init_result.get("authMethods")
        return methods if isinstance(methods, list) else []

    # ---- sessions and turns ----------------------------------------------------------

    def new_session(self, process: AgentProcess | None = None, **params: Any) -> Message:
        """A ``session/new`` response (``cwd`` is the probe's unless given)."""
        return (process or self.main).request("session/new", {"cwd": self.cwd, **params})

    def new_session_id(self, **params: Any) -> str:
        response = self.new_session(**params)
        session_id = (response.get("result") or {}).get("sessionId")
        if not isinstance(session_id, str):
            raise NoAnswer(f"session/new failed: {json.dumps(response)[:200]}")
        return session_id

    @functools.cached_property
    def session(self) -> Message:
        """The main session's ``session/new`` response."""
        return self.new_session()

    @property
    def session_id(self) -> str:
        session_id = (self.session.get("result") or {}).get("sessionId")
        if not isinstance(session_id, str):
            raise NoAnswer(f"session/new failed: {json.dumps(self.session)[:200]}")
        return session_id

    def prompt(
        self,
        blocks: list[Message],
        session_id: str | None = None,
        *,
        meta: Message | None = None,
        process: AgentProcess | None = None,
    ) -> Turn:
        """Prompt and follow the turn until its idle (or the budget runs out)."""
        process = process or self.main
        session_id = session_id or self.session_id
        params: Message = {"sessionId": session_id, "prompt": blocks}
        if meta is not None:
            params["_meta"] = meta
        response, got = process.call("session/prompt", params)
        turn = Turn(session_id, response, list(got))
        if "result" in response:
            self.follow(turn, process)
        self.turns.append(turn)
        return turn

    def follow(self, turn: Turn, process: AgentProcess, timeout: float = TURN_TIMEOUT) -> None:
        """Read until the turn's idle."""
        for message in turn.messages:
            if is_idle(message, turn.session_id):
                turn.idle = update_of(message)
                return
        more = process.pump(lambda m: is_idle(m, turn.session_id), timeout)
        turn.messages.extend(more)
        for message in more:
            if is_idle(message, turn.session_id):
                turn.idle = update_of(message)

    @functools.cached_property
    def turn(self) -> Turn:
        """The main text turn."""
        return self.prompt([{"type": "text", "text": "Hello from the conformance kit"}])

    @functools.cached_property
    def second_turn(self) -> Turn:
        """A second text turn on the main session."""
        self.turn  # noqa: B018  (the first comes first)
        return self.prompt([{"type": "text", "text": "And once more"}])

    # ---- cancellation ----------------------------------------------------------------

    def interrupted(self, how: str, meta: Message | None = None) -> Interrupted:
        """A turn held in flight (its permission request unanswered), then cancelled
        (``how``: ``cancel``) or closed (``close``)."""
        process = self.main
        session_id = self.new_session_id()
        process.client.hold_permissions = True
        try:
            response, got = process.call(
                "session/prompt",
                {"sessionId": session_id, "prompt": [{"type": "text", "text": "Work, please"}]},
            )
            turn = Turn(session_id, response, list(got))

            def waiting(message: Any) -> bool:
                asks = is_request(message) and message.get("method") == "session/request_permission"
                return asks or is_idle(message, session_id)

            if not any(waiting(m) for m in turn.messages):
                turn.messages.extend(process.pump(waiting, TURN_TIMEOUT))
        finally:
            process.client.hold_permissions = False
        result = Interrupted(turn, in_flight=not any(is_idle(m, session_id) for m in turn.messages))
        mark = len(turn.messages)
        if how == "cancel":
            params: Message = {"sessionId": session_id}
            if meta is not None:
                params["_meta"] = meta
            process.notify("session/cancel", params)
        else:
            close, got = process.call("session/close", {"sessionId": session_id})
            result.close_response = close
            turn.messages.extend(got)
        self.follow(turn, process)
        turn.messages.extend(process.pump(None, QUIET))
        result.after = turn.messages[mark:]
        for held in process.client.held:
            process.send(
                {
                    "jsonrpc": "2.0",
                    "id": held.get("id"),
                    "result": {"outcome": {"outcome": "cancelled"}},
                }
            )
        process.client.held.clear()
        return result

    @functools.cached_property
    def cancelled(self) -> Interrupted:
        return self.interrupted("cancel")

    @functools.cached_property
    def closed(self) -> Interrupted:
        return self.interrupted("close")

    # ---- resume ----------------------------------------------------------------------

    def resume(self, session_id: str, **params: Any) -> tuple[Message, list[Any], list[Any]]:
        """``session/resume``: the response, what came before it, what came in a quiet
        period after it."""
        response, before = self.main.call(
            "session/resume", {"sessionId": session_id, "cwd": self.cwd, **params}
        )
        after = self.main.pump(None, QUIET)
        return response, before, after

    @functools.cached_property
    def replay(self) -> tuple[Message, list[Any], list[Any]]:
        self.turn  # noqa: B018  (history first)
        return self.resume(self.session_id, replayFrom={"type": "start"})

    @functools.cached_property
    def plain_resume(self) -> tuple[Message, list[Any], list[Any]]:
        self.turn  # noqa: B018
        return self.resume(self.session_id)

    # ---- the whole run ---------------------------------------------------------------

    def everything(self) -> list[tuple[AgentProcess, Any]]:
        """Every message any process of the probe received, with its process."""
        return [(process, message) for process in self.processes for message in process.received]

    def ping(self, process: AgentProcess | None = None) -> bool:
        """Whether the process still answers a request (any answer)."""
        try:
            (process or self.main).request("_tck/ping", {}, timeout=TIMEOUT)
        except NoAnswer:
            return False
        return True


@dataclass
class Interrupted:
    """A turn cancelled (or closed) while its work was in flight."""

    turn: Turn
    in_flight: bool
    close_response: Message | None = None
    after: list[Any] = field(default_factory=list)
    """What arrived after the cancel (or close) was sent."""

    @property
    def stray_responses(self) -> list[Any]:
        """Responses after the cancel that answer nothing the harness asked."""
        return [m for m in self.after if is_response(m) and m.get("id") is None]
