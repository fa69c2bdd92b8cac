"""Authentication required (-32000): the agent answers it, the client raises a typed error
that names the advertised login methods, logs in with one and calls again."""

from __future__ import annotations

import asyncio

import pytest

from agentproto._core.errors import UsageError
from agentproto.acp import Agent, AgentSession, AuthRequiredError, RpcError, RpcErrorCode
from agentproto.acp import schema as acp
from tests.acp.lifecycle_helpers import pair
from tests.acp.test_lifecycle_bad_input import FakeAgent

BROWSER = acp.AgentAuthMethod(method_id="browser", name="Log in with a browser")
TERMINAL = acp.TerminalAuthMethod(method_id="tui", name="Log in in a terminal")


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
        answer = await client.initialize()
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
