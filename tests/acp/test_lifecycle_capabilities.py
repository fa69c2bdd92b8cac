"""What the runner tells a client about the agent: capabilities that advertise exactly what
is served, auth methods the client can use, answers the schema accepts, and the
``session/delete`` of a session it does not hold (the ACP test kit's ACP-INIT-204,
ACP-AUTH-202, ACP-AUTH-206, ACP-SCHEMA-001, ACP-DELETE-203)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError, UsageError
from agentproto.acp import Agent, AgentRunner, AgentSession, MemoryPipe
from agentproto.acp import schema as acp
from agentproto.acp._protocol.methods import method_table
from agentproto.acp._rpc.endpoint import Endpoint, RequestReceived
from tests.acp.lifecycle_helpers import Lines

HELLO = {"protocolVersion": 2, "info": {"name": "kit", "version": "0"}}
TERMINAL_OK = {"auth": {"terminal": {}}}
AGENT_LOGIN = acp.AgentAuthMethod(method_id="key", name="API key")
TERMINAL_LOGIN = acp.TerminalAuthMethod(method_id="tui", name="Log in in a terminal")


class Hello(Agent):
    """The smallest useful agent: it answers prompts, nothing more."""

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str | None:
        await session.message("hi")
        return None


class Raw:
    """A runner driven line by line: the test writes the client's JSON and reads the answers."""

    def __init__(self, runner: AgentRunner, to_agent: MemoryPipe, to_client: MemoryPipe) -> None:
        self.runner, self._to_agent, self._lines = runner, to_agent, Lines(to_client)
        self._next = 0

    async def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request; its response (notifications before it are skipped)."""
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self._to_agent.write(orjson.dumps(message) + b"\n")
        while "id" not in (answer := await self._lines.next()) or answer["id"] != self._next:
            pass
        return answer


@contextlib.asynccontextmanager
async def raw(agent: Agent, **options: Any) -> AsyncIterator[tuple[Raw, list[Diagnostic]]]:
    """``agent`` served by a runner that the test drives with raw JSON-RPC lines."""
    diagnostics: list[Diagnostic] = []
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    runner = AgentRunner(agent, to_agent, to_client, on_diagnostic=diagnostics.append, **options)
    serving = asyncio.create_task(runner.serve())
    try:
        yield Raw(runner, to_agent, to_client), diagnostics
    finally:
        await runner.close()
        await serving


async def capabilities_of(agent: Agent, **options: Any) -> dict[str, Any]:
    """The ``capabilities`` of ``agent``'s ``initialize`` answer, as sent."""
    async with raw(agent, **options) as (client, _):
        answer = await client.call("initialize", HELLO)
    capabilities: dict[str, Any] = answer["result"].get("capabilities", {})
    return capabilities


def markers(value: Any) -> list[Any]:
    """Every value of a capabilities object, nested ones included."""
    found = []
    for inner in value.values() if isinstance(value, dict) else ():
        found += [inner, *markers(inner)]
    return found


# ---- capabilities ---------------------------------------------------------------------------


async def test_an_agent_that_answers_prompts_advertises_the_session_methods() -> None:
    """The baseline ``session`` marker (the runner serves session/new, list, resume, close
    and cancel) and ``session.delete`` (served by default): every v2 client then knows
    it has sessions. Markers are objects, never booleans (ACP-INIT-204)."""
    capabilities = await capabilities_of(Hello())
    assert capabilities == {"session": {"delete": {}}}
    assert all(isinstance(marker, dict) for marker in markers(capabilities))


async def test_no_session_marker_without_prompt() -> None:
    """An agent that does not answer prompts does not claim the session methods, nor a
    marker inside ``session`` (it would imply the baseline)."""
    assert await capabilities_of(Agent()) == {}


def test_the_default_capabilities_need_a_runner() -> None:
    """Outside a runner nothing is served: the default capabilities() says so clearly."""
    with pytest.raises(UsageError) as refused:
        Hello().capabilities()
    assert refused.value.code == "agent.no-runner"


async def test_a_marker_needs_every_method_it_advertises() -> None:
    """With ``unstable=True``: fork and status markers for the overridden methods;
    ``session.archive`` only once both archive and unarchive are; ``auth.status`` for
    auth_status. Without ``unstable``, none of them (the methods are not served)."""

    class Unstable(Hello):
        async def fork_session(self, request: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
            return acp.ForkSessionResponse(session_id="fork")

        async def session_status(
            self, request: acp.SessionStatusRequest
        ) -> acp.SessionStatusResponse:
            raise NotImplementedError

        async def archive_session(
            self, request: acp.ArchiveSessionRequest
        ) -> acp.ArchiveSessionResponse:
            return acp.ArchiveSessionResponse()

        async def auth_status(self, request: acp.AuthStatusRequest) -> acp.AuthStatusResponse:
            raise NotImplementedError

    served = await capabilities_of(Unstable(), unstable=True)
    assert served == {"session": {"delete": {}, "fork": {}, "status": {}}, "auth": {"status": {}}}
    assert await capabilities_of(Unstable()) == {"session": {"delete": {}}}


async def test_the_markers_follow_the_method_table() -> None:
    """Each marker the schema ties to methods is advertised exactly when the runner serves
    all of them (checked against the runner's own ``serves``, marker by marker)."""

    class Everything(Hello):
        pass

    for path, methods in method_table(2).capabilities.items():
        for method in methods:
            assert method in method_table(2).requests or method in method_table(2).notifications
        async with raw(Everything(), unstable=True) as (client, _):
            served = all(client.runner.serves(method) for method in methods)
            node: Any = (await client.call("initialize", HELLO))["result"].get("capabilities")
            for key in path:
                node = None if not isinstance(node, dict) else node.get(key)
            assert (node == {} or isinstance(node, dict)) is served, path


async def test_an_agent_that_says_its_capabilities_is_believed() -> None:
    """An override of capabilities() is sent as is; super() gives the served markers to
    add to (here the prompt content types the runner cannot know about)."""

    class Images(Hello):
        def capabilities(self) -> acp.AgentCapabilities:
            capabilities = super().capabilities()
            assert capabilities.session is not None
            capabilities.session.prompt = acp.PromptCapabilities(
                image=acp.PromptImageCapabilities()
            )
            return capabilities

    class Nothing(Hello):
        def capabilities(self) -> acp.AgentCapabilities:
            return acp.AgentCapabilities()

    assert await capabilities_of(Images()) == {"session": {"delete": {}, "prompt": {"image": {}}}}
    assert await capabilities_of(Nothing()) == {}


# ---- auth methods and the client's capabilities ----------------------------------------------


class Offers(Hello):
    """Offers an agent login and, to a client that can run it, a terminal login."""

    def __init__(self, *, check: bool) -> None:
        self.check = check
        self.seen: list[acp.InitializeRequest | None] = []

    def auth_methods(self) -> list[acp.AuthMethod]:
        self.seen.append(self.runner.client)
        methods: list[acp.AuthMethod] = [AGENT_LOGIN, TERMINAL_LOGIN]
        if self.check:
            return [method for method in methods if self.runner.client_accepts(method)]
        return methods

    async def login(self, request: acp.LoginAuthRequest) -> acp.LoginAuthResponse:
        return acp.LoginAuthResponse()

    async def logout(self, request: acp.LogoutAuthRequest) -> acp.LogoutAuthResponse:
        return acp.LogoutAuthResponse()


def offered(answer: dict[str, Any]) -> list[str]:
    return [method["type"] for method in answer["result"].get("authMethods", [])]


async def test_no_terminal_auth_method_to_a_client_that_cannot_run_it() -> None:
    """ACP-AUTH-202: a client that did not advertise terminal auth is not offered the
    terminal method (left out, with a diagnostic for the agent's author); one that did
    is. auth_methods() sees the client's initialize request."""
    agent = Offers(check=False)
    async with raw(agent) as (client, diagnostics):
        assert offered(await client.call("initialize", HELLO)) == ["agent"]
        assert [d.code for d in diagnostics] == ["auth.method-not-offered"]
        diagnostics.clear()
        with_terminal = HELLO | {"capabilities": TERMINAL_OK}
        assert offered(await client.call("initialize", with_terminal)) == ["agent", "terminal"]
        assert diagnostics == []
    first, second = agent.seen
    assert first is not None and first.info.name == "kit"
    assert second is not None and second.capabilities is not None
    assert second.capabilities.auth is not None


async def test_an_agent_can_ask_what_the_client_accepts() -> None:
    """client_accepts() lets auth_methods() offer the terminal method only where it may
    (no diagnostic then)."""
    async with raw(Offers(check=True)) as (client, diagnostics):
        assert offered(await client.call("initialize", HELLO)) == ["agent"]
    assert diagnostics == []


async def test_only_the_terminal_method_then_none_at_all() -> None:
    """When every offered method is left out, authMethods is omitted (an empty list would
    still say nothing, but no login/logout is advertised either way)."""

    class TerminalOnly(Offers):
        def auth_methods(self) -> list[acp.AuthMethod]:
            return [TERMINAL_LOGIN]

    async with raw(TerminalOnly(check=False)) as (client, _):
        answer = await client.call("initialize", HELLO)
    assert "authMethods" not in answer["result"]


async def test_an_auth_method_type_the_schema_reserves_is_not_offered() -> None:
    """ACP-AUTH-206: an auth method type that is not the schema's and not an extension's
    (``_``-prefixed) is reserved for future ACP versions: left out, with a diagnostic;
    an extension's type is offered."""

    class Custom(Offers):
        def auth_methods(self) -> list[acp.AuthMethod]:
            return [
                acp.OtherAuthMethod(type="sso", method_id="sso", name="SSO"),
                acp.OtherAuthMethod(type="_sso", method_id="x-sso", name="SSO (extension)"),
            ]

    async with raw(Custom(check=False)) as (client, diagnostics):
        assert offered(await client.call("initialize", HELLO)) == ["_sso"]
    assert [d.code for d in diagnostics] == ["auth.method-not-offered"]
    assert "reserved" in diagnostics[0].message


# ---- answers checked against the schema -----------------------------------------------------


async def test_an_auth_method_definition_is_an_error_in_the_agent_not_on_the_wire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """ACP-SCHEMA-001 / ACP-AUTH-206: offering the method *definition* class (no ``type``
    discriminator) instead of the union member is caught before sending: the agent logs
    the error, the client gets an internal error, not a malformed answer; the runner is
    not initialized by it."""

    class Mistaken(Offers):
        def auth_methods(self) -> list[acp.AuthMethod]:
            return [acp.AuthMethodAgent(method_id="key", name="API key")]  # type: ignore[list-item]

    with caplog.at_level(logging.ERROR, logger="agentproto"):
        async with raw(Mistaken(check=False)) as (client, _):
            answer = await client.call("initialize", HELLO)
            refused = await client.call("session/new", {"cwd": "/w"})
    assert "result" not in answer and answer["error"]["code"] == -32603
    assert "/authMethods/0" in answer["error"]["data"]["details"]
    assert "/authMethods/0" in caplog.text
    assert refused["error"]["code"] == -32600  # initialize did not succeed


def test_the_endpoint_checks_a_typed_answer_and_keeps_the_request_in_flight() -> None:
    """respond() with a typed object whose JSON the schema rejects raises SchemaError,
    sends nothing, and leaves the request to be answered again."""
    endpoint = Endpoint("agent")
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
    (event,) = endpoint.feed(orjson.dumps(request) + b"\n")
    assert isinstance(event, RequestReceived)
    bad = acp.InitializeResponse(
        protocol_version=2,
        info=acp.Implementation(name="a", version="1"),
        auth_methods=[acp.AuthMethodTerminal(method_id="t", name="T")],  # type: ignore[list-item]
    )
    with pytest.raises(SchemaError, match="/authMethods/0"):
        endpoint.respond(1, bad)
    assert endpoint.data_to_send() == b"" and endpoint.in_flight == {1}
    good = acp.InitializeResponse(
        protocol_version=2, info=acp.Implementation(name="a", version="1")
    )
    endpoint.respond(1, good)
    assert orjson.loads(endpoint.data_to_send())["result"]["protocolVersion"] == 2


# ---- session/delete -------------------------------------------------------------------------


async def test_deleting_an_unknown_session_succeeds() -> None:
    """ACP-DELETE-203: session/delete of a session id the agent never had answers with
    success (the session is not listed, which is what delete asks for)."""
    async with raw(Hello()) as (client, _):
        await client.call("initialize", HELLO)
        answer = await client.call("session/delete", {"sessionId": "never-was"})
        listed = await client.call("session/list", {})
    assert answer["result"] == {}
    assert listed["result"]["sessions"] == []
