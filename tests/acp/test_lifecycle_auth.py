"""Authentication required (-32000): the agent answers it, the client raises a typed error
that names the advertised login methods, logs in with one and calls again."""

from __future__ import annotations

import asyncio

import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import UsageError
from agentproto.acp import (
    AcpClient,
    Agent,
    AgentRunner,
    AgentSession,
    AuthRequiredError,
    MemoryPipe,
    RpcError,
    RpcErrorCode,
)
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import pair
from tests.acp.test_lifecycle_bad_input import FakeAgent
from tests.acp.test_lifecycle_v1 import Tap

BROWSER = acp.AgentAuthMethod(method_id="browser", name="Log in with a browser")
TERMINAL = acp.TerminalAuthMethod(method_id="tui", name="Log in in a terminal")
TERMINAL_AUTH = acp.ClientCapabilities(
    auth=acp.ClientAuthCapabilities(terminal=acp.TerminalAuthCapabilities())
)
"""A client that can run the agent in a terminal, offered the terminal method."""


class Gated(Agent):
    """Sessions only after ``auth/login`` with the agent-run method."""

    def __init__(self) -> None:
        self.logins: list[str] = []

    def auth_methods(self) -> list[acp.AuthMethod]:
        return [BROWSER, TERMINAL]

    async def login(self, request: acp.LoginAuthRequest) -> acp.LoginAuthResponse:
        self.logins.append(request.method_id)
        return acp.LoginAuthResponse()

    async def new_session(
        self, session: AgentSession, request: acp.NewSessionRequest
    ) -> acp.NewSessionResponse | None:
        if not self.logins:
            raise AuthRequiredError("log in first", {"hint": "browser"})
        return None


async def test_auth_required_then_login_and_retry() -> None:
    """session/new answers -32000 until auth/login; the client raises AuthRequiredError with
    the methods it may log in with (not the terminal one), logs in and retries."""
    agent = Gated()
    async with pair(agent) as (runner, client):
        answer = await client.initialize(capabilities=TERMINAL_AUTH)
        assert answer.auth_methods == [BROWSER, TERMINAL]
        with pytest.raises(AuthRequiredError) as refused:
            await client.new_session("/w")
        error = refused.value
        assert isinstance(error, RpcError) and error.code is RpcErrorCode.AUTHENTICATION_REQUIRED
        assert (error.message, error.data, error.method) == (
            "log in first",
            {"hint": "browser"},
            "session/new",
        )
        assert error.auth_methods == client.login_methods == [BROWSER]
        assert runner.sessions == {}  # the refused session is not kept
        await client.login(error.auth_methods[0].method_id)
        session = await client.new_session("/w")
        assert list(runner.sessions) == [session.session_id]
        assert agent.logins == ["browser"]


async def test_login_only_with_an_advertised_login_method() -> None:
    """login() refuses a method the agent did not advertise, a terminal method (never passed
    to auth/login) and any method before initialize, sending nothing."""
    agent = Gated()
    async with pair(agent) as (_, client):
        with pytest.raises(UsageError, match="not an auth method"):
            await client.login("browser")  # not initialized: nothing advertised yet
        await client.initialize()
        for method_id in ("tui", "password"):
            with pytest.raises(UsageError) as refused:
                await client.login(method_id)
            assert refused.value.code == "client.auth-method"
    assert agent.logins == []


async def test_a_raw_agents_auth_required_answer() -> None:
    """-32000 written by hand (not by agentproto's encoder) raises AuthRequiredError, whose
    auth_methods come from the hand-written initialize answer."""
    fake = FakeAgent()
    async with fake.client:
        initialize = asyncio.create_task(fake.client.initialize())
        request = await fake.recv()
        methods = [
            {"type": "agent", "methodId": "key", "name": "API key"},
            {"type": "terminal", "methodId": "tui", "name": "TUI"},
            {"type": "_custom", "methodId": "x", "name": "Custom"},
        ]
        result = {"protocolVersion": 2, "info": {"name": "raw", "version": "0"}}
        fake.send({"id": request["id"], "result": result | {"authMethods": methods}})
        await initialize
        new = asyncio.create_task(fake.client.new_session("/w"))
        request = await fake.recv()
        fake.send({"id": request["id"], "error": {"code": -32000, "message": "auth"}})
        with pytest.raises(AuthRequiredError) as refused:
            await new
        assert [m.method_id for m in refused.value.auth_methods] == ["key"]


class GatedV1(Gated):
    """The same agent, speaking only v1; it also advertises a method of a type v1 lacks."""

    protocol_versions = (1,)

    def auth_methods(self) -> list[acp.AuthMethod]:
        custom = acp.OtherAuthMethod(type="_sso", method_id="sso", name="SSO")
        return [*super().auth_methods(), custom]

    async def logout(self, request: acp.LogoutAuthRequest) -> acp.LogoutAuthResponse:
        self.logins.append("logout")
        return acp.LogoutAuthResponse()


async def test_auth_through_a_v1_connection() -> None:
    """With v1 negotiated: authMethods in the v1 shape (`id`, no `type` for an agent method;
    a method of a type v1 lacks left out, reported), -32000 raises AuthRequiredError on the
    v2 client, auth/login and auth/logout are v1 authenticate and logout on the wire."""
    to_agent, to_client = MemoryPipe(), MemoryPipe()
    agent_out, client_out = Tap(to_client), Tap(to_agent)
    agent, diagnostics = GatedV1(), list[Diagnostic]()
    runner = AgentRunner(agent, to_agent, agent_out, on_diagnostic=diagnostics.append)
    client = AcpClient.connect(to_client, client_out)
    serving = asyncio.create_task(runner.serve())
    async with client:
        answer = await client.initialize(capabilities=TERMINAL_AUTH)
        assert answer.protocol_version == 1 and answer.auth_methods == [BROWSER, TERMINAL]
        with pytest.raises(AuthRequiredError) as refused:
            await client.new_session("/w")
        assert refused.value.auth_methods == [BROWSER]
        await client.login("browser")
        await client.new_session("/w")
        await client.logout()
    await runner.close()
    await serving
    assert agent.logins == ["browser", "logout"]
    assert client.diagnostics == []
    assert [d.code for d in diagnostics] == ["v1.auth-method"]
    assert agent_out.sent[0]["result"]["authMethods"] == [
        {"id": "browser", "name": "Log in with a browser"},
        {"type": "terminal", "id": "tui", "name": "Log in in a terminal"},
    ]
    requests = [(m["method"], m.get("params")) for m in client_out.sent if "method" in m]
    assert ("authenticate", {"methodId": "browser"}) in requests
    assert "logout" in [method for method, _ in requests]
    (error,) = [m["error"] for m in agent_out.sent if "error" in m]
    assert error["code"] == -32000
