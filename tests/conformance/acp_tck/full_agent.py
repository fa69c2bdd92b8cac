"""A tests-only ACP v2 agent that serves everything the conformance checks can probe.

Sessions (list, resume, close, delete), prompts with images, audio and embedded
context, MCP servers, a config option, an ``agent`` and a ``terminal`` auth method,
and a turn that plans, streams, thinks, runs a tool call with a terminal and asks for
permission.

    python -m tests.conformance.acp_tck.full_agent
"""

from __future__ import annotations

from typing import Any

from agentproto.acp import Agent, AgentSession, run_agent
from agentproto.acp import schema as acp

ALLOW = acp.PermissionOption(option_id="allow", name="Allow once", kind="allow_once")
REJECT = acp.PermissionOption(option_id="reject", name="Reject", kind="reject_once")
MODES = ("ask", "code")


def mode_option(value: str) -> acp.SessionConfigOption:
    """The one config option: a ``select`` whose current value is ``value``."""
    return acp.SelectSessionConfigOption(
        config_id="mode",
        name="Mode",
        current_value=value,
        options=[acp.SessionConfigSelectOption(value=mode, name=mode.title()) for mode in MODES],
    )


class FullAgent(Agent):
    """Serves every stable method; advertises every marker it serves."""

    info = acp.Implementation(name="agentproto-tck-agent", version="1")

    def __init__(self) -> None:
        self.modes: dict[str, str] = {}

    def capabilities(self) -> acp.AgentCapabilities:
        """What the runner serves, plus what only the agent knows it handles."""
        caps = super().capabilities()
        assert caps.session is not None
        caps.session.prompt = acp.PromptCapabilities(
            image=acp.PromptImageCapabilities(),
            audio=acp.PromptAudioCapabilities(),
            embedded_context=acp.PromptEmbeddedContextCapabilities(),
        )
        caps.session.mcp = acp.McpCapabilities(
            stdio=acp.McpStdioCapabilities(), http=acp.McpHttpCapabilities()
        )
        caps.session.additional_directories = acp.SessionAdditionalDirectoriesCapabilities()
        return caps

    def auth_methods(self) -> list[acp.AuthMethod]:
        """An ``agent`` method, and a ``terminal`` one for clients that opted in."""
        return [
            acp.AgentAuthMethod(method_id="token", name="Token"),
            acp.TerminalAuthMethod(
                method_id="login-tui",
                name="Log in in a terminal",
                args=["--login"],
                env=[acp.EnvVariable(name="TCK_LOGIN", value="1")],
            ),
        ]

    async def login(self, request: acp.LoginAuthRequest) -> acp.LoginAuthResponse:
        """Any advertised method logs in at once."""
        return acp.LoginAuthResponse()

    async def logout(self, request: acp.LogoutAuthRequest) -> acp.LogoutAuthResponse:
        """Logging out always succeeds."""
        return acp.LogoutAuthResponse()

    async def new_session(
        self, session: AgentSession, request: acp.NewSessionRequest
    ) -> acp.NewSessionResponse:
        """A session starts in ``ask`` mode."""
        self.modes[session.session_id] = MODES[0]
        return acp.NewSessionResponse(
            session_id=session.session_id, config_options=[mode_option(MODES[0])]
        )

    async def resume_session(
        self, session: AgentSession, request: acp.ResumeSessionRequest
    ) -> acp.ResumeSessionResponse:
        """The resumed session's config option."""
        return acp.ResumeSessionResponse(
            config_options=[mode_option(self.modes.get(session.session_id, MODES[0]))]
        )

    async def set_config_option(self, request: Any) -> acp.SetSessionConfigOptionResponse:
        """Set ``mode``; answer with the complete list."""
        value = str(request.value)
        if request.config_id == "mode" and value in MODES:
            self.modes[request.session_id] = value
        current = self.modes.get(request.session_id, MODES[0])
        session = self.runner.sessions.get(request.session_id)
        if session is not None:  # the complete state, as a session update too
            await session.emit(
                acp.ConfigOptionUpdateSessionUpdate(config_options=[mode_option(current)])
            )
        return acp.SetSessionConfigOptionResponse(config_options=[mode_option(current)])

    async def prompt(self, session: AgentSession, request: acp.PromptRequest) -> str:
        """Plan, think, answer, run a permitted tool call with a terminal."""
        text = " ".join(b.text for b in request.prompt if isinstance(b, acp.TextContentBlock))
        await session.plan(
            [acp.PlanEntry(content="Answer", priority="medium", status="in_progress")]
        )
        await session.thought_chunk("Thinking.", message_id="thought-" + session.session_id)
        await session.message(f"You said: {text}")
        tool = await session.tool_call("Run echo", kind="execute")
        decision = await session.request_permission("Run echo?", [ALLOW, REJECT], tool_call=tool)
        if not decision.allowed:
            await tool.finish("failed")
            return "end_turn"
        terminal = await tool.terminal("echo hi", cwd=session.cwd)
        await terminal.output(b"hi\n")
        await terminal.exit(0)
        await tool.finish()
        await session.plan([acp.PlanEntry(content="Answer", priority="medium", status="completed")])
        return "end_turn"


if __name__ == "__main__":
    run_agent(FullAgent())
