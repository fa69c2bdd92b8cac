"""The ACP v2 requirement ids of the maintainers' conformance kit, with this repository's
own one-line summaries.

The ids, tiers and capability gates are the kit's (``agentclientprotocol/acp-tck``,
``src/tck/v2/requirements.py``, the v2 draft registry); the summaries are ours, and
``spec`` names the prose page (under ``docs/protocol/v2/``) or the pinned schema
definition (``schema.unstable.json#/$defs/...``) the requirement rests on.

Tiers: ``MANDATORY`` (always judged), ``CAPABILITY`` (judged when the agent advertises
the gate: a ``capabilities...`` marker, or ``inferred:`` support seen on the wire),
``ADVISORY`` (a SHOULD: judged, reported), ``INFORMATIONAL`` (recorded, never judged).

``pinned`` says what the check uses where the kit's later alpha schema names something
the pinned schema (npm ``@agentclientprotocol/sdk`` 2.4.0) does not have in that form.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Tier(str, Enum):
    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"
    INFORMATIONAL = "INFORMATIONAL"


@dataclass(frozen=True)
class Requirement:
    id: str
    tier: Tier
    capability: str | None
    """The gate: a dotted path in the ``initialize`` result, or ``inferred:<field>``."""
    summary: str
    spec: str
    pinned: str | None = None

    @property
    def test_name(self) -> str:
        """The pytest function named by the id."""
        return "test_" + self.id.replace("-", "_")


M, C, A, I = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY, Tier.INFORMATIONAL
SESSION = "capabilities.session"
CONFIG = "inferred:configOptions"
AUTH = "inferred:authMethods"
NO_BATCH = (
    "the pinned schema has no batch envelope (its root anyOf is the four single-message "
    "branches Agent/Client/ProtocolLevel/Proxy): each array member is checked against them"
)
STOP = (
    "the pinned schema types IdleStateUpdate.stopReason as a plain string: the constants "
    "are the prose's, read from the pinned v1 schema's $defs/StopReason"
)

_ALL = (
    # ---- initialize ----------------------------------------------------------------
    Requirement("ACP-INIT-001", M, None, "initialize answers with a result, not an error, whatever version is negotiated", "initialization.mdx; #/$defs/InitializeResponse"),
    Requirement("ACP-INIT-201", M, None, "the negotiated protocolVersion is an integer: 2 when asked for 2, else the agent's latest", "initialization.mdx (version negotiation)"),
    Requirement("ACP-INIT-003", M, None, "asking for version 65535 still succeeds and is not echoed back", "initialization.mdx (version negotiation)"),
    Requirement("ACP-INIT-202", M, None, "asking for version 1 succeeds with version 1 or 2, never an error", "initialization.mdx (version negotiation)"),
    Requirement("ACP-INIT-203", M, None, "the result's info has non-empty string name and version", "#/$defs/InitializeResponse/required; #/$defs/Implementation"),
    Requirement("ACP-INIT-204", M, None, "capabilities and every known marker in it are objects (or absent/null), never booleans", "#/$defs/AgentCapabilities; #/$defs/SessionCapabilities"),
    Requirement("ACP-SCHEMA-001", M, None, "every message of the initialize exchange validates against the v2 schema", "schema.unstable.json#/anyOf; #/$defs/InitializeResponse"),
    Requirement("ACP-SCHEMA-002", A, None, "agent-authored params and results carry no root key their definition does not declare", "extensibility.mdx"),
    # ---- sessions and prompts --------------------------------------------------------
    Requirement("ACP-SESSION-001", C, SESSION, "session/new with an absolute cwd gives a non-empty string sessionId in a valid response", "session-setup.mdx; #/$defs/NewSessionResponse"),
    Requirement("ACP-SESSION-002", C, SESSION, "two session/new calls give two different sessionIds", "session-setup.mdx; #/$defs/SessionId"),
    Requirement("ACP-SESSION-203", C, SESSION, "session/new works both with mcpServers omitted and with mcpServers: []", "#/$defs/NewSessionRequest/properties/mcpServers"),
    Requirement("ACP-PROMPT-201", C, SESSION, "the session/prompt result is an acceptance receipt with a non-empty messageId", "prompt-lifecycle.mdx; #/$defs/PromptResponse"),
    Requirement("ACP-PROMPT-203", C, SESSION, "the inserted user message is reported (user_message or its chunks) with the receipt's messageId", "prompt-lifecycle.mdx; #/$defs/UserMessage; #/$defs/ContentChunk"),
    Requirement("ACP-PROMPT-205", C, SESSION, "every session/update of a turn validates and names the prompted session", "#/$defs/UpdateSessionNotification; #/$defs/SessionUpdate"),
    Requirement("ACP-PROMPT-003", A, None, "a prompt of text plus resource_link is accepted and its turn ends idle", "content.mdx; #/$defs/ResourceLink"),
    Requirement("ACP-STATE-201", C, SESSION, "a turn-ending idle state_update is preceded in the turn by state_update running", "prompt-lifecycle.mdx; #/$defs/StateUpdate"),
    Requirement("ACP-STATE-202", C, SESSION, "after running, an idle state_update arrives within the turn's time budget", "prompt-lifecycle.mdx; #/$defs/IdleStateUpdate"),
    Requirement("ACP-STATE-203", C, SESSION, "the idle ending a running turn has a stopReason that is a defined constant or starts with _", "prompt-lifecycle.mdx (stop reasons); #/$defs/IdleStateUpdate", STOP),
    Requirement("ACP-PROMPTCAP-001", C, "capabilities.session.prompt.image", "a prompt with an image block is accepted and its turn ends idle", "#/$defs/PromptCapabilities; #/$defs/ImageContent"),
    Requirement("ACP-PROMPTCAP-002", C, "capabilities.session.prompt.audio", "a prompt with an audio block is accepted and its turn ends idle", "#/$defs/PromptCapabilities; #/$defs/AudioContent"),
    Requirement("ACP-PROMPTCAP-003", C, "capabilities.session.prompt.embeddedContext", "a prompt with an embedded resource block is accepted and its turn ends idle", "#/$defs/PromptCapabilities; #/$defs/EmbeddedResource"),
    Requirement("ACP-PERM-201", C, SESSION, "a permission request is well formed (sessionId, title, non-empty options) and the turn ends after the answer", "tool-calls.mdx; #/$defs/RequestPermissionRequest; #/$defs/PermissionOption"),
    Requirement("ACP-CLIENTCAP-201", C, SESSION, "no elicitation/create reaches a client that advertised no elicitation mode", "elicitation.mdx; #/$defs/CreateElicitationRequest"),
    Requirement("ACP-CLIENTCAP-202", C, SESSION, "every method the agent calls during a turn is a defined client or protocol method, or starts with _", "meta.unstable.json (agent-to-client methods); migration.mdx", "the pinned release ships no meta.unstable.json: the methods are the x-method annotations of schema.unstable.json with x-side client, plus $/ protocol methods"),
    Requirement("ACP-INFO-CONCURRENT-201", I, None, "record what a second prompt to a busy session gets", "rfds/v2/prompt.mdx"),
    Requirement("ACP-INFO-UNKNOWNSESSION-001", I, None, "record what a prompt to a session id never created gets", "error.mdx"),
    # ---- cancellation ----------------------------------------------------------------
    Requirement("ACP-CANCEL-201", C, SESSION, "session/cancel during work ends it with idle state_update stopReason cancelled", "prompt-lifecycle.mdx (cancellation)"),
    Requirement("ACP-CANCEL-202", C, SESSION, "no state_update for the session follows the cancelled idle", "prompt-lifecycle.mdx (cancellation)"),
    Requirement("ACP-CANCEL-203", C, SESSION, "a cancelled turn is neither an error on session/prompt nor another stop reason", "prompt-lifecycle.mdx (cancellation)"),
    Requirement("ACP-CANCEL-204", I, None, "record that the agent stopped its work on cancel (timing cannot be judged)", "prompt-lifecycle.mdx (cancellation)"),
    Requirement("ACP-CANCEL-205", C, SESSION, "session/cancel, a notification, gets no response", "#/$defs/CancelSessionNotification; transports.mdx"),
    Requirement("ACP-CANCEL-206", C, SESSION, "a cancel with only sessionId and one also carrying _meta are both accepted", "#/$defs/CancelSessionNotification"),
    Requirement("ACP-CANCEL-207", C, SESSION, "the cancelled turn's stop reason is exactly cancelled (custom ones need a _ prefix)", "prompt-lifecycle.mdx (stop reasons)", STOP),
    Requirement("ACP-CANCEL-208", C, SESSION, "session/close during work cancels it like session/cancel (idle, cancelled)", "session-setup.mdx (closing)"),
    Requirement("ACP-INFO-CANCEL-201", I, None, "record what cancel of an unknown session or an idle one does", "prompt-lifecycle.mdx"),
    Requirement("ACP-INFO-CANCEL-202", I, None, "record whether the agent sends $/cancel_request for its own pending requests on cancel", "cancellation.mdx"),
    # ---- transport and JSON-RPC ------------------------------------------------------
    Requirement("ACP-TRANSPORT-201", M, None, "every stdout line is JSON: one message object, or a non-empty array of them", "transports.mdx", NO_BATCH),
    Requirement("ACP-TRANSPORT-002", M, None, "stdout is valid UTF-8", "transports.mdx"),
    Requirement("ACP-TRANSPORT-203", M, None, "messages are one per line, with no embedded newline (batches too)", "transports.mdx"),
    Requirement("ACP-JSONRPC-001", M, None, "a response echoes its request's id exactly (integer, string, inside a batch)", "transports.mdx; overview.mdx"),
    Requirement("ACP-JSONRPC-002", M, None, "a response has exactly one of result and error; an error has integer code and string message", "overview.mdx; #/$defs/Error"),
    Requirement("ACP-JSONRPC-003", M, None, "notifications are never answered, inside a batch neither", "overview.mdx; transports.mdx"),
    Requirement("ACP-JSONRPC-004", A, None, "an unknown method is answered -32601", "extensibility.mdx"),
    Requirement("ACP-JSONRPC-005", A, None, "after bad requests (invalid or empty batch too) the connection still works", "overview.mdx; extensibility.mdx"),
    Requirement("ACP-BATCH-201", M, None, "[] is answered with one -32600 object with id null, not an array", "transports.mdx (batches); JSON-RPC 2.0 section 6", NO_BATCH),
    Requirement("ACP-BATCH-202", M, None, "a batch of notifications gets no reply at all; notifications in a batch get no response", "transports.mdx (batches)"),
    Requirement("ACP-BATCH-203", A, None, "an invalid member of a batch gets its own -32600 with id null while its siblings are served", "transports.mdx (batches)", NO_BATCH),
    Requirement("ACP-BATCH-204", A, None, "a batch with requests is answered with one array of their responses", "transports.mdx (batches)", NO_BATCH),
    Requirement("ACP-BATCH-205", A, None, "batch responses are matched by id (any order is allowed)", "transports.mdx (batches)"),
    Requirement("ACP-BATCH-206", I, None, "record the order batch members were answered in (any order is allowed)", "transports.mdx (batches)"),
    Requirement("ACP-BATCH-207", I, None, "record whether the agent itself ever sent a batch", "transports.mdx (batches)"),
    Requirement("ACP-BATCH-208", I, None, "record whether the agent batched lifecycle-sensitive messages (a sender's duty)", "transports.mdx (batches); migration.mdx"),
    Requirement("ACP-INFO-BATCH-201", I, None, "record what a batch line that is not valid JSON gets", "transports.mdx (batches)"),
    Requirement("ACP-INFO-BATCH-202", I, None, "record what a batch mixing a request and a response gets", "transports.mdx (batches)", NO_BATCH),
    # ---- resume, list, close, delete, directories, MCP -------------------------------
    Requirement("ACP-RESUME-201", C, SESSION, "session/resume of a known session (no replayFrom) gives a valid result", "session-setup.mdx; #/$defs/ResumeSessionRequest; #/$defs/ResumeSessionResponse"),
    Requirement("ACP-RESUME-202", C, SESSION, "with replayFrom start, replayed updates all precede the resume response", "session-setup.mdx (replay); #/$defs/ReplayFrom"),
    Requirement("ACP-RESUME-203", C, SESSION, "without replayFrom, no history update precedes the resume response", "session-setup.mdx (replay)"),
    Requirement("ACP-RESUME-204", C, SESSION, "a replayed user message keeps the messageId its prompt receipt gave", "session-setup.mdx (replay); #/$defs/PromptResponse"),
    Requirement("ACP-RESUME-205", C, SESSION, "in a replay, a message's chunks follow its whole-message update", "session-setup.mdx (replay)"),
    Requirement("ACP-LIST-201", C, SESSION, "session/list with {} answers a valid result whose sessions is an array", "session-list.mdx; #/$defs/ListSessionsResponse"),
    Requirement("ACP-LIST-202", C, SESSION, "session/list for a cwd nobody uses answers sessions: []", "session-list.mdx"),
    Requirement("ACP-LIST-203", C, SESSION, "session/list filtered by cwd returns only sessions with that cwd", "session-list.mdx"),
    Requirement("ACP-LIST-204", C, SESSION, "every listed session's cwd is an absolute path", "session-list.mdx; #/$defs/SessionInfo"),
    Requirement("ACP-CLOSE-201", C, SESSION, "session/close of an idle session answers a valid empty object", "session-setup.mdx; #/$defs/CloseSessionResponse"),
    Requirement("ACP-CLOSE-202", C, SESSION, "session/close during work cancels it (the same evidence as ACP-CANCEL-208)", "session-setup.mdx (closing)"),
    Requirement("ACP-DELETE-201", C, "capabilities.session.delete", "session/delete of an existing session answers an empty object", "session-delete.mdx; #/$defs/DeleteSessionResponse"),
    Requirement("ACP-DELETE-202", C, "capabilities.session.delete", "a deleted session is no longer in session/list", "session-delete.mdx"),
    Requirement("ACP-DELETE-203", A, None, "deleting an unknown or already deleted session succeeds quietly", "session-delete.mdx"),
    Requirement("ACP-ADDDIRS-201", C, "capabilities.session.additionalDirectories", "session/new with an absolute additionalDirectories entry is accepted", "session-setup.mdx; #/$defs/NewSessionRequest"),
    Requirement("ACP-ADDDIRS-202", C, "capabilities.session.additionalDirectories", "session/resume with an absolute additionalDirectories entry is accepted", "session-setup.mdx; #/$defs/ResumeSessionRequest"),
    Requirement("ACP-MCP-201", I, None, "record whether session/new takes a stdio MCP server entry (when advertised)", "session-setup.mdx; #/$defs/McpServerStdio"),
    Requirement("ACP-MCP-202", I, None, "record whether session/new takes an http MCP server entry (when advertised)", "session-setup.mdx; #/$defs/McpServerHttp"),
    # ---- config options --------------------------------------------------------------
    Requirement("ACP-CONFIG-201", C, CONFIG, "every configOptions entry of session/new is well formed for its type", "session-config-options.mdx; #/$defs/SessionConfigOption"),
    Requirement("ACP-CONFIG-202", C, CONFIG, "session/set_config_option answers the complete list (every known configId)", "session-config-options.mdx; #/$defs/SetSessionConfigOptionResponse"),
    Requirement("ACP-CONFIG-203", C, CONFIG, "session/resume's configOptions, when present, are well formed", "session-setup.mdx; #/$defs/ResumeSessionResponse"),
    Requirement("ACP-CONFIG-204", C, CONFIG, "a select option's currentValue is one of its options' values", "session-config-options.mdx; #/$defs/SessionConfigSelect"),
    Requirement("ACP-CONFIG-206", C, CONFIG, "a config_option_update carries every known configId", "session-config-options.mdx; #/$defs/ConfigOptionUpdate"),
    # ---- auth --------------------------------------------------------------------------
    Requirement("ACP-AUTH-201", A, None, "authMethods' methodIds are unique", "#/$defs/AuthMethod; #/$defs/AuthMethodId"),
    Requirement("ACP-AUTH-202", M, None, "a terminal auth method is offered only to a client advertising capabilities.auth.terminal", "#/$defs/AuthMethodTerminal; #/$defs/ClientAuthCapabilities; #/$defs/TerminalAuthCapabilities"),
    Requirement("ACP-AUTH-203", C, AUTH, "auth/logout answers a valid result", "#/$defs/LogoutAuthRequest; #/$defs/LogoutAuthResponse"),
    Requirement("ACP-AUTH-204", C, AUTH, "auth/login with an advertised non-terminal method is served, and session/new then works", "#/$defs/LoginAuthRequest; #/$defs/LoginAuthResponse"),
    Requirement("ACP-AUTH-205", A, None, "with no authMethods, session/new does not answer -32000", "schema.mdx (error codes)"),
    Requirement("ACP-AUTH-206", M, None, "every authMethods type is agent, terminal or starts with _", "authentication.mdx; extensibility.mdx; #/$defs/AuthMethod"),
    Requirement("ACP-AUTH-207", M, None, "a terminal method's args are strings and env entries are name/value strings with unique names", "#/$defs/AuthMethodTerminal; #/$defs/EnvVariable"),
    # ---- session update payloads -------------------------------------------------------
    Requirement("ACP-PATCH-201", C, SESSION, "every message update or chunk carries a non-empty messageId", "prompt-lifecycle.mdx; #/$defs/ContentChunk; #/$defs/AgentMessage"),
    Requirement("ACP-PATCH-203", C, SESSION, "two prompts on one session get two different messageIds", "prompt-lifecycle.mdx"),
    Requirement("ACP-PATCH-204", C, SESSION, "tool_call_update has a toolCallId; tool_call_content_chunk has toolCallId and content", "#/$defs/ToolCallUpdate; #/$defs/ToolCallContentChunk"),
    Requirement("ACP-PATCH-205", C, SESSION, "every plan_update's plan has a non-empty planId", "agent-plan.mdx; #/$defs/PlanUpdateContent"),
    Requirement("ACP-PATCH-206", C, SESSION, "terminal_update.cwd is absolute and never changes for one terminalId", "tool-calls.mdx (terminals)"),
    Requirement("ACP-PATCH-207", C, SESSION, "terminal output data is standalone valid base64", "tool-calls.mdx (terminals); #/$defs/TerminalOutputChunk"),
    Requirement("ACP-PATCH-208", A, None, "a tool call's first update has a title, and its name never changes", "tool-calls.mdx"),
    Requirement("ACP-PATCH-209", A, None, "while a permission request waits the state is requires_action, then running again", "prompt-lifecycle.mdx; #/$defs/RequiresActionStateUpdate"),
    Requirement("ACP-ENUM-201", C, SESSION, "tool kind/status and plan priority/status values are defined constants or start with _", "extensibility.mdx; tool-calls.mdx; agent-plan.mdx"),
    Requirement("ACP-ENUM-202", A, None, "sessionUpdate, state and tool-call content type values are defined or start with _", "extensibility.mdx; #/$defs/SessionUpdate"),
    Requirement("ACP-ENUM-203", A, None, "a _-prefixed permission outcome from the client does not break the agent", "extensibility.mdx; #/$defs/RequestPermissionOutcome"),
    # ---- extensibility, errors, shutdown, diagnostics ----------------------------------
    Requirement("ACP-EXT-001", M, None, "a _-prefixed custom request gets a response (result or any error)", "extensibility.mdx"),
    Requirement("ACP-EXT-201", A, None, "an unknown _-prefixed notification gets no response and no crash", "extensibility.mdx"),
    Requirement("ACP-EXT-202", A, None, "vendor extensions are under capabilities._meta, not unknown keys of capabilities", "extensibility.mdx; #/$defs/AgentCapabilities"),
    Requirement("ACP-EXT-203", I, None, "record what an unknown $/ notification does", "schema.unstable.json#/anyOf (ProtocolLevel)", "the pinned schema has no $defs/ProtocolLevelNotification: its root ProtocolLevel branch is the equivalent"),
    Requirement("ACP-META-001", A, None, "a session/prompt carrying _meta is accepted and its turn proceeds", "extensibility.mdx; #/$defs/PromptRequest"),
    Requirement("ACP-META-201", A, None, "every _meta the agent sends is an object or null", "extensibility.mdx"),
    Requirement("ACP-ERROR-001", A, None, "error messages are non-empty single lines; data is JSON", "#/$defs/Error; overview.mdx"),
    Requirement("ACP-SHUTDOWN-001", A, None, "the agent exits by itself soon after stdin closes", "transports.mdx"),
    Requirement("ACP-STDERR-001", I, None, "record how many bytes the agent wrote to stderr", "transports.mdx"),
    Requirement("ACP-INFO-PARSE-001", I, None, "record what a line that is not JSON gets", "error.mdx"),
    Requirement("ACP-INFO-INVALIDREQ-001", I, None, "record what JSON that is no JSON-RPC message gets", "error.mdx"),
)

REGISTRY: dict[str, Requirement] = {requirement.id: requirement for requirement in _ALL}
assert len(REGISTRY) == len(_ALL), "duplicate id"
