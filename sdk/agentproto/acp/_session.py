"""ACP v2 session state: every ``session/update`` upsert, applied in receive order.

Theory of operation
-------------------
A client that keeps an ACP v2 session folds the ``session/update``
notifications it receives into *entities*. This module owns every rule of that
fold; :class:`SessionState` is one session, :class:`SessionStore` the sessions
of a connection (keyed by ``sessionId``) fed whole JSON-RPC messages.

* **Upserts** (``tool_call_update``, ``terminal_update``, ``user_message``,
  ``agent_message``, ``agent_thought``, ``session_info_update``,
  ``compaction_update``, ``subagent_update``, ``session_message``): an unseen id
  creates the entity with its defaults, later updates patch it. A patch field
  omitted (:data:`~agentproto.acp.UNSET`) is unchanged, ``None`` clears it
  (resets it to its default), a value replaces it whole; collections are
  replaced whole and ``[]`` clears like ``None`` — except a subagent's
  ``additionalDirectories``, where ``None`` means "inherit the parent's" and
  differs from ``[]``. The top-level ``_meta`` of exactly these upserts (and of
  the ``toolCall`` of a ``session/request_permission`` tool-call subject) is a
  metadata patch (:func:`~agentproto.acp.apply_meta_update`); every other
  ``_meta`` (chunks, plans, notices, nested objects) is never stored as entity
  metadata.
* **Tool calls** start as kind ``other``, status ``pending``, without title,
  ``name`` or ``capabilities``; ``kind: null`` resets to ``other``,
  ``status: null`` to ``pending``. An unknown kind is kept as sent and *shown*
  as ``other`` (:attr:`ToolCallState.display_kind`); an unknown status is kept
  and *counts* as in progress (:attr:`ToolCallState.effective_status`).
* **Chunks** (``tool_call_content_chunk``, the three message chunks,
  ``compaction_summary_chunk``, ``session_message_chunk``) append one item to
  the entity's collection in receive order, creating the entity when its id is
  unseen. An upsert carrying the collection replaces everything accumulated so
  far, chunks included; later chunks append again.
* **Terminals**: ``output`` replaces all bytes; each ``terminal_output_chunk``'s
  ``data`` is base64-decoded on its own (encoded strings are never
  concatenated) and its bytes appended. Bytes are kept raw, so a UTF-8 or
  escape sequence split across chunks is whole again in
  :attr:`TerminalState.output`.
* **Compactions**: the first notification for an id (update or summary chunk)
  creates it in progress and fixes its position; ``status`` is required on
  every ``compaction_update`` and is not a patch field.
* **Plans**: ``plan_update`` replaces the plan with that ``planId`` whole (its
  ``_meta`` too: it is not a patch), ``plan_removed`` deletes it.
* **Other known kinds** keep their latest update (``available_commands_update``,
  ``config_option_update``, ``usage_update``, ``state_update``); notices are
  kept in receive order. An unknown ``sessionUpdate`` kind is kept in
  :attr:`SessionState.unknown` and reported as a diagnostic.

Entities keep the position of their first notification:
:meth:`SessionState.entities` lists them in that order and
:meth:`SessionState.to_json` renders them as wire-named JSON.

Bad input never leaves half an update behind: every value an update needs is
computed (base64 decoded, metadata patched) before anything is stored, so an
update that raises leaves the state exactly as it was. Invalid base64 and a
``_meta`` that is neither an object nor ``null`` raise
:class:`~agentproto.SchemaError`; a typed update with a field of the wrong
Python type raises :class:`~agentproto.UsageError`. On the wire, a wrong type
in a patch field is the parser's business: tolerant parsing (the schema's
``x-deserialize-default-on-error``) drops the field with a diagnostic, strict
parsing rejects the update. :class:`SessionStore` turns each rejected message
into a diagnostic when it is tolerant, or raises when strict.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias

import attrs

from agentproto._core.converter import Unrecognised, _Context
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError, UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._jsonrpc import Message, MessageReader, Notification, Request, Response
from agentproto.acp._meta import Meta, apply_meta_update
from agentproto.acp._wire import METHOD_REQUEST_PERMISSION, METHOD_SESSION_UPDATE, _converter

__all__ = [
    "TOOL_CALL_STATUSES",
    "TOOL_KINDS",
    "CompactionState",
    "Entity",
    "MessageState",
    "PlanState",
    "SessionInfoState",
    "SessionMessageState",
    "SessionState",
    "SessionStore",
    "SubagentState",
    "TerminalState",
    "ToolCallState",
]

TOOL_KINDS = frozenset(v2.ENUM_VALUES["ToolKind"])
"""The tool kinds ACP v2 defines; any other kind is displayed as ``other``."""

TOOL_CALL_STATUSES = frozenset(v2.ENUM_VALUES["ToolCallStatus"])
"""The tool call statuses ACP v2 defines; any other status counts as in progress."""

_FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})

_dump = _converter.dump


def _dump_list(items: list[Any]) -> list[Any]:
    return [_dump(item) for item in items]


def _b64decode(data: object, location: str) -> bytes:
    """Decode one base64 string on its own (RFC 4648, padding required)."""
    if not isinstance(data, str):
        raise SchemaError("type", location, f"expected a base64 string, got {type(data).__name__}")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as err:
        raise SchemaError("contentEncoding", location, f"invalid base64: {err}") from None


def _as_list(value: object, location: str) -> list[Any]:
    """A fresh list of the items of a collection patch value (``None`` clears)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise UsageError(
            "acp.bad-update", f"{location}: expected a list, not {type(value).__name__}"
        )
    return list(value)


# ---- entities -----------------------------------------------------------------------------


@attrs.define(kw_only=True)
class ToolCallState:
    """A tool call as the client holds it (``tool_call:<toolCallId>``).

    Attributes:
        tool_call_id: the id.
        name: the programmatic tool name, ``None`` when unknown.
        title: the human-readable title, ``None`` when unset.
        kind: the kind as sent (``other`` by default); see :attr:`display_kind`.
        status: the status as sent (``pending`` by default); see
            :attr:`effective_status`.
        content: the content items, in order (``tool_call_content_chunk``
            items appended).
        locations: the file locations.
        raw_input: the raw input (any JSON), ``None`` when unset.
        raw_output: the raw output (any JSON), ``None`` when unset.
        capabilities: the client controls the call supports, ``None`` for none.
        meta: the stored metadata, ``None`` for none.
    """

    tool_call_id: str
    name: str | None = None
    title: str | None = None
    kind: str = "other"
    status: str = "pending"
    content: list[v2.ToolCallContent] = attrs.Factory(list)
    locations: list[v2.ToolCallLocation] = attrs.Factory(list)
    raw_input: Any = None
    raw_output: Any = None
    capabilities: v2.ToolCallCapabilities | None = None
    meta: Meta | None = None

    @property
    def display_kind(self) -> str:
        """The kind to display: an unknown kind shows as ``other``."""
        return self.kind if self.kind in TOOL_KINDS else "other"

    @property
    def effective_status(self) -> str:
        """The status to act on: an unknown status counts as ``in_progress``."""
        return self.status if self.status in TOOL_CALL_STATUSES else "in_progress"

    @property
    def finished(self) -> bool:
        """Whether the call completed, failed or was cancelled."""
        return self.status in _FINAL_STATUSES

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the tool call (unset fields absent)."""
        out: dict[str, Any] = {"toolCallId": self.tool_call_id}
        if self.name is not None:
            out["name"] = self.name
        if self.title is not None:
            out["title"] = self.title
        out["kind"] = self.kind
        out["status"] = self.status
        if self.content:
            out["content"] = _dump_list(self.content)
        if self.locations:
            out["locations"] = _dump_list(self.locations)
        if self.raw_input is not None:
            out["rawInput"] = self.raw_input
        if self.raw_output is not None:
            out["rawOutput"] = self.raw_output
        if self.capabilities is not None:
            out["capabilities"] = _dump(self.capabilities)
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class TerminalState:
    """An agent-owned terminal (``terminal:<terminalId>``).

    Attributes:
        terminal_id: the id.
        command: the command, ``None`` when unknown.
        cwd: the absolute working directory, ``None`` when unknown.
        output: every output byte (the last ``output`` snapshot, then the
            decoded chunks), ``None`` while no output was reported.
        exit_status: the exit information; set once the terminal exited.
        size: the terminal size, when known.
        capabilities: the client controls the terminal supports.
        meta: the stored metadata, ``None`` for none.
    """

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: bytearray | None = None
    exit_status: v2.TerminalExitStatus | None = None
    size: v2.TerminalSize | None = None
    capabilities: v2.TerminalCapabilities | None = None
    meta: Meta | None = None

    @property
    def exited(self) -> bool:
        """Whether an exit status was reported."""
        return self.exit_status is not None

    @property
    def text(self) -> str:
        """The output decoded as UTF-8 (invalid sequences replaced), ``""`` if none."""
        return bytes(self.output or b"").decode("utf-8", errors="replace")

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON; ``output`` is ``{"data": <base64 of all bytes>}``."""
        out: dict[str, Any] = {"terminalId": self.terminal_id}
        if self.command is not None:
            out["command"] = self.command
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.output is not None:
            out["output"] = {"data": base64.b64encode(self.output).decode("ascii")}
        if self.exit_status is not None:
            out["exitStatus"] = _dump(self.exit_status)
        if self.size is not None:
            out["size"] = _dump(self.size)
        if self.capabilities is not None:
            out["capabilities"] = _dump(self.capabilities)
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class MessageState:
    """A user message, agent message or agent thought.

    Each of the three types has its own id space: the same ``messageId`` may
    name one of each.

    Attributes:
        kind: ``"user_message"``, ``"agent_message"`` or ``"agent_thought"``
            (the entity key prefix and the upsert's ``sessionUpdate``).
        message_id: the id.
        content: the content blocks, in order.
        meta: the stored metadata, ``None`` for none.
    """

    kind: str
    message_id: str
    content: list[v2.ContentBlock] = attrs.Factory(list)
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the message."""
        out: dict[str, Any] = {"messageId": self.message_id}
        if self.content:
            out["content"] = _dump_list(self.content)
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class SessionInfoState:
    """The session's own information (``session_info``).

    Attributes:
        title: the session title, ``None`` when unset.
        updated_at: the RFC 3339 time of the last activity, ``None`` when unset.
        meta: the stored metadata, ``None`` for none.
    """

    title: str | None = None
    updated_at: str | None = None
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the session information."""
        out: dict[str, Any] = {}
        if self.title is not None:
            out["title"] = self.title
        if self.updated_at is not None:
            out["updatedAt"] = self.updated_at
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class CompactionState:
    """A context compaction (``compaction:<compactionId>``).

    Attributes:
        compaction_id: the id.
        status: the status of the last ``compaction_update`` (``in_progress``
            when a summary chunk created it).
        summary: the summary content blocks, in order.
        error: the error details, ``None`` when unset.
        meta: the stored metadata, ``None`` for none.
    """

    compaction_id: str
    status: str = "in_progress"
    summary: list[v2.ContentBlock] = attrs.Factory(list)
    error: str | None = None
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the compaction."""
        out: dict[str, Any] = {"compactionId": self.compaction_id, "status": self.status}
        if self.summary:
            out["summary"] = _dump_list(self.summary)
        if self.error is not None:
            out["error"] = self.error
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class SubagentState:
    """A child session this session owns (``subagent:<sessionId>``).

    Attributes:
        session_id: the child's session id.
        title: the display title, ``None`` when unset.
        description: the display description, ``None`` when unset.
        capabilities: the session mutations the client may make, ``None``
            for none.
        state: the mirrored foreground state, ``None`` when unconfirmed.
        cwd: the working directory, ``None`` to inherit the parent's.
        additional_directories: the extra workspace roots; ``None`` inherits
            the parent's, ``[]`` means none.
        meta: the stored metadata, ``None`` for none.
    """

    session_id: str
    title: str | None = None
    description: str | None = None
    capabilities: v2.SubagentSessionCapabilities | None = None
    state: v2.StateUpdate | None = None
    cwd: str | None = None
    additional_directories: list[str] | None = None
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON; ``additionalDirectories`` shows ``[]`` when set so."""
        out: dict[str, Any] = {"sessionId": self.session_id}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.capabilities is not None:
            out["capabilities"] = _dump(self.capabilities)
        if self.state is not None:
            out["state"] = _dump(self.state)
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.additional_directories is not None:
            out["additionalDirectories"] = list(self.additional_directories)
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class SessionMessageState:
    """A message sent to or received from another session (``session_message:<messageId>``).

    Attributes:
        message_id: the id in this session's transcript.
        sender_session_id: the sending session, ``None`` when unset.
        recipient_session_id: the receiving session, ``None`` when unset.
        sender_message_id: the outgoing view's id, ``None`` when unset.
        recipient_message_id: the incoming view's id, ``None`` when unset.
        content: the content blocks, in order.
        meta: the stored metadata, ``None`` for none.
    """

    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    sender_message_id: str | None = None
    recipient_message_id: str | None = None
    content: list[v2.ContentBlock] = attrs.Factory(list)
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the message."""
        out: dict[str, Any] = {"messageId": self.message_id}
        if self.sender_session_id is not None:
            out["senderSessionId"] = self.sender_session_id
        if self.recipient_session_id is not None:
            out["recipientSessionId"] = self.recipient_session_id
        if self.sender_message_id is not None:
            out["senderMessageId"] = self.sender_message_id
        if self.recipient_message_id is not None:
            out["recipientMessageId"] = self.recipient_message_id
        if self.content:
            out["content"] = _dump_list(self.content)
        if self.meta:
            out["_meta"] = self.meta
        return out


@attrs.define(kw_only=True)
class PlanState:
    """A plan (``plan:<planId>``): the content of its last ``plan_update``.

    Attributes:
        plan_id: the id.
        plan: the plan content, as the last ``plan_update`` sent it.
        meta: that update's ``_meta``, kept whole (it is not a patch).
    """

    plan_id: str
    plan: v2.PlanUpdateContent
    meta: Meta | None = None

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON: ``planId``, ``plan`` and the update's ``_meta``."""
        out: dict[str, Any] = {"planId": self.plan_id, "plan": _dump(self.plan)}
        if self.meta:
            out["_meta"] = self.meta
        return out


Entity: TypeAlias = (
    ToolCallState
    | TerminalState
    | MessageState
    | SessionInfoState
    | CompactionState
    | SubagentState
    | SessionMessageState
    | PlanState
)
"""Any entity kept by an upsert or a plan update."""

_LatestUpdate: TypeAlias = (
    v2.AvailableCommandsUpdateSessionUpdate
    | v2.ConfigOptionUpdateSessionUpdate
    | v2.UsageUpdateSessionUpdate
    | v2.StateUpdateSessionUpdate
)


def _update_json(update: Any) -> dict[str, Any]:
    """An update's wire JSON without its ``sessionUpdate`` tag."""
    out: dict[str, Any] = _dump(update)
    out.pop("sessionUpdate", None)
    return out


# ---- the session --------------------------------------------------------------------------

_MESSAGE_KINDS = ("user_message", "agent_message", "agent_thought")
_LATEST = {
    v2.AvailableCommandsUpdateSessionUpdate: "available_commands",
    v2.ConfigOptionUpdateSessionUpdate: "config_options",
    v2.StateUpdateSessionUpdate: "state",
}


class SessionState:
    """The state of one ACP v2 session: its entities, as the client keeps them.

    Feed it the ``update`` of each ``session/update`` notification, in receive
    order, with :meth:`apply` (or a recorded log with :meth:`replay`), and the
    ``toolCall`` of each ``session/request_permission`` tool-call subject with
    :meth:`apply_permission_request`. See the module documentation for the
    rules.

    Read it as typed entities (the attributes below, :meth:`entities`) or as
    wire-named JSON (:meth:`to_json`). Treat what it returns as read-only:
    entities are updated in place by later updates.

    Attributes:
        session_id: the session's id, when known.
        tool_calls: tool calls by ``toolCallId``.
        terminals: terminals by ``terminalId``.
        user_messages: user messages by ``messageId``.
        agent_messages: agent messages by ``messageId``.
        agent_thoughts: agent thoughts by ``messageId``.
        session_info: the session information, once reported.
        compactions: compactions by ``compactionId``.
        subagents: child sessions by ``sessionId``.
        session_messages: inter-session messages by ``messageId``.
        plans: plans by ``planId``.
        available_commands: the last ``available_commands_update``.
        config_options: the last ``config_option_update``.
        usage: the last ``usage_update``.
        state: the last ``state_update``.
        notices: every ``notice``, in receive order.
        unknown: every update of an unknown kind, in receive order, kept whole.
        diagnostics: the problems tolerated so far (unknown kinds).

    Example:
        >>> from agentproto.acp import parse_session_update
        >>> state = SessionState("s1")
        >>> state.apply(parse_session_update(
        ...     {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Read"}))
        >>> state.tool_calls["c1"].status
        'pending'
    """

    def __init__(
        self, session_id: str | None = None, *, diagnostics: list[Diagnostic] | None = None
    ) -> None:
        """Create an empty session.

        Args:
            session_id: the session's id, when known.
            diagnostics: the list to report tolerated problems to (a new one
                by default; a store shares its own).
        """
        self.session_id = session_id
        self.tool_calls: dict[str, ToolCallState] = {}
        self.terminals: dict[str, TerminalState] = {}
        self.user_messages: dict[str, MessageState] = {}
        self.agent_messages: dict[str, MessageState] = {}
        self.agent_thoughts: dict[str, MessageState] = {}
        self.session_info: SessionInfoState | None = None
        self.compactions: dict[str, CompactionState] = {}
        self.subagents: dict[str, SubagentState] = {}
        self.session_messages: dict[str, SessionMessageState] = {}
        self.plans: dict[str, PlanState] = {}
        self.available_commands: v2.AvailableCommandsUpdateSessionUpdate | None = None
        self.config_options: v2.ConfigOptionUpdateSessionUpdate | None = None
        self.usage: v2.UsageUpdateSessionUpdate | None = None
        self.state: v2.StateUpdateSessionUpdate | None = None
        self.notices: list[v2.NoticeSessionUpdate] = []
        self.unknown: list[v2.OtherSessionUpdate] = []
        self.diagnostics: list[Diagnostic] = [] if diagnostics is None else diagnostics
        self._messages = {
            "user_message": self.user_messages,
            "agent_message": self.agent_messages,
            "agent_thought": self.agent_thoughts,
        }
        # entity keys ("tool_call:c1", "session_info", "notices", ...) in first-seen order
        self._order: dict[str, None] = {}

    def __repr__(self) -> str:
        return f"<SessionState {self.session_id!r}: {len(self._order)} entities>"

    def __eq__(self, other: object) -> bool:
        """Same entities in the same order, same latest values (diagnostics ignored)."""
        if not isinstance(other, SessionState):
            return NotImplemented
        return (
            list(self._order) == list(other._order)
            and all(self.entity(key) == other.entity(key) for key in self._order)
            and self.unknown == other.unknown
        )

    __hash__ = None  # type: ignore[assignment]

    # ---- applying ---------------------------------------------------------------------

    def apply(self, update: v2.SessionUpdate) -> None:
        """Apply one typed update (the ``update`` of a ``session/update``).

        Args:
            update: the update, as :func:`~agentproto.acp.parse_session_update`
                returns it or as built by hand.

        Raises:
            SchemaError: invalid base64 in terminal output (keyword
                ``contentEncoding``, location ``/data`` or ``/output/data``),
                or a ``_meta`` patch that is not an object or ``None``
                (location ``/_meta``). The state is unchanged.
            UsageError: ``update`` is not a session update or holds a value
                of the wrong Python type. The state is unchanged.
        """
        handler = _HANDLERS.get(update.__class__)
        if handler is None:
            raise UsageError(
                "acp.not-an-update",
                f"expected a session update, not {type(update).__name__}",
            )
        try:
            handler(self, update)
        except (TypeError, AttributeError) as err:
            raise UsageError("acp.bad-update", f"malformed {type(update).__name__}: {err}") from err

    def apply_tool_call(self, tool_call: v2.ToolCallUpdate) -> ToolCallState:
        """Apply a tool call upsert that is not a notification (a permission subject's).

        Args:
            tool_call: the ``toolCall`` of a ``session/request_permission``
                tool-call subject; it patches the stored call exactly like a
                ``tool_call_update``, ``_meta`` included.

        Returns:
            The stored tool call.

        Raises:
            SchemaError, UsageError: as :meth:`apply`.
        """
        try:
            return _apply_tool_call(self, tool_call)
        except (TypeError, AttributeError) as err:
            raise UsageError("acp.bad-update", f"malformed tool call: {err}") from err

    def apply_permission_request(self, request: v2.RequestPermissionRequest) -> None:
        """Apply a ``session/request_permission`` request's tool-call subject, if any.

        Only a subject of type ``tool_call`` touches the state (its
        ``toolCall`` patches the stored call, creating it when unseen); other
        subjects and the request's own fields describe the prompt only.

        Raises:
            SchemaError, UsageError: as :meth:`apply`.
        """
        subject = request.subject
        if isinstance(subject, v2.ToolCallRequestPermissionSubject):
            self.apply_tool_call(subject.tool_call)

    def replay(self, updates: Iterable[v2.SessionUpdate]) -> None:
        """Apply a recorded log of updates in order, exactly as live delivery does.

        Metadata is never reset implicitly: replaying over a state that holds
        stale keys keeps those the log does not remove.

        Raises:
            SchemaError, UsageError: as :meth:`apply`, for the first bad
                update; the updates before it stay applied, it and the rest
                are not. A note on the error gives its 0-based index.
        """
        for index, update in enumerate(updates):
            try:
                self.apply(update)
            except (SchemaError, UsageError) as err:
                err.add_note(f"update {index} of the replayed log")
                raise

    # ---- reading ----------------------------------------------------------------------

    def keys(self) -> list[str]:
        """The entity keys in first-seen order (``tool_call:c1``, ``session_info``, ...)."""
        return list(self._order)

    def entity(self, key: str) -> Any:
        """The entity (or latest value) under an entity key.

        Returns:
            An :data:`Entity`, the latest update of a latest-value kind, or the
            list of notices for ``notices``.

        Raises:
            KeyError: no such entity.
        """
        kind, _, ident = key.partition(":")
        table = self._tables().get(kind)
        if table is not None:
            return table[ident]
        value = {
            "session_info": self.session_info,
            "available_commands": self.available_commands,
            "config_options": self.config_options,
            "usage": self.usage,
            "state": self.state,
            "notices": self.notices or None,
        }.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def entities(self) -> Iterator[tuple[str, Any]]:
        """Every entity key with its entity (see :meth:`entity`), in first-seen order."""
        for key in self._order:
            yield key, self.entity(key)

    def to_json(self) -> dict[str, Any]:
        """The session as wire-named JSON: ``{"entities": {key: entity, ...}}``.

        Each entity holds its id field and its current fields, defaults
        included; a cleared or never-set field is absent (a subagent's
        ``additionalDirectories`` shows ``[]`` when set so); ``_meta`` is
        absent when there is none. Latest-value kinds show their last update
        without ``sessionUpdate``; ``notices`` is the list of notices.
        """
        entities: dict[str, Any] = {}
        for key, value in self.entities():
            if isinstance(value, list):
                entities[key] = [_update_json(notice) for notice in value]
            elif isinstance(value, _LATEST_TYPES):
                entities[key] = _update_json(value)
            else:
                entities[key] = value.to_json()
        return {"entities": entities}

    def _tables(self) -> dict[str, dict[str, Any]]:
        return {
            "tool_call": self.tool_calls,
            "terminal": self.terminals,
            "user_message": self.user_messages,
            "agent_message": self.agent_messages,
            "agent_thought": self.agent_thoughts,
            "compaction": self.compactions,
            "subagent": self.subagents,
            "session_message": self.session_messages,
            "plan": self.plans,
        }


_LATEST_TYPES = (*_LATEST, v2.UsageUpdateSessionUpdate)

# ---- the rules, one function per update kind ----------------------------------------------
#
# Each function first computes every new value (this is where bad input raises), then
# creates the entity if needed and assigns: an update that raises changes nothing.


def _apply_tool_call(state: SessionState, u: Any) -> ToolCallState:
    ident = u.tool_call_id
    call = state.tool_calls.get(ident)
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if call is None else call.meta, meta)
    content = u.content
    if content is not UNSET:
        content = content[:] if content.__class__ is list else _as_list(content, "/content")
    locations = u.locations
    if locations is not UNSET:
        locations = (
            locations[:] if locations.__class__ is list else _as_list(locations, "/locations")
        )
    if call is None:
        key = "tool_call:" + ident  # a non-string id fails here, before any change
        call = state.tool_calls[ident] = ToolCallState(tool_call_id=ident)
        state._order[key] = None
    value = u.name
    if value is not UNSET:
        call.name = value
    value = u.title
    if value is not UNSET:
        call.title = value
    value = u.kind
    if value is not UNSET:
        call.kind = "other" if value is None else value
    value = u.status
    if value is not UNSET:
        call.status = "pending" if value is None else value
    if content is not UNSET:
        call.content = content
    if locations is not UNSET:
        call.locations = locations
    value = u.raw_input
    if value is not UNSET:
        call.raw_input = value
    value = u.raw_output
    if value is not UNSET:
        call.raw_output = value
    value = u.capabilities
    if value is not UNSET:
        call.capabilities = value
    if meta is not UNSET:
        call.meta = meta
    return call


def _apply_tool_call_chunk(state: SessionState, u: v2.ToolCallContentChunkSessionUpdate) -> None:
    ident = u.tool_call_id
    call = state.tool_calls.get(ident)
    if call is None:
        key = "tool_call:" + ident
        call = state.tool_calls[ident] = ToolCallState(tool_call_id=ident)
        state._order[key] = None
    call.content.append(u.content)


def _apply_terminal(state: SessionState, u: v2.TerminalUpdateSessionUpdate) -> None:
    ident = u.terminal_id
    terminal = state.terminals.get(ident)
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if terminal is None else terminal.meta, meta)
    output = u.output
    data: bytearray | None = None
    if output is not UNSET and output is not None:
        data = bytearray(_b64decode(output.data, "/output/data"))
    if terminal is None:
        key = "terminal:" + ident
        terminal = state.terminals[ident] = TerminalState(terminal_id=ident)
        state._order[key] = None
    if u.command is not UNSET:
        terminal.command = u.command
    if u.cwd is not UNSET:
        terminal.cwd = u.cwd
    if output is not UNSET:
        terminal.output = data
    if u.exit_status is not UNSET:
        terminal.exit_status = u.exit_status
    if u.size is not UNSET:
        terminal.size = u.size
    if u.capabilities is not UNSET:
        terminal.capabilities = u.capabilities
    if meta is not UNSET:
        terminal.meta = meta


def _apply_terminal_chunk(state: SessionState, u: v2.TerminalOutputChunkSessionUpdate) -> None:
    data = _b64decode(u.data, "/data")
    ident = u.terminal_id
    terminal = state.terminals.get(ident)
    if terminal is None:
        key = "terminal:" + ident
        terminal = state.terminals[ident] = TerminalState(terminal_id=ident)
        state._order[key] = None
    if terminal.output is None:
        terminal.output = bytearray(data)
    else:
        terminal.output += data


def _message_rules(
    kind: str,
) -> tuple[Callable[[SessionState, Any], None], Callable[[SessionState, Any], None]]:
    prefix = kind + ":"

    def upsert(state: SessionState, u: Any) -> None:
        table = state._messages[kind]
        ident = u.message_id
        message = table.get(ident)
        meta = u.meta
        if meta is not UNSET:
            meta = apply_meta_update(None if message is None else message.meta, meta)
        content = u.content
        if content is not UNSET:
            content = _as_list(content, "/content")
        if message is None:
            key = prefix + ident
            message = table[ident] = MessageState(kind=kind, message_id=ident)
            state._order[key] = None
        if content is not UNSET:
            message.content = content
        if meta is not UNSET:
            message.meta = meta

    def chunk(state: SessionState, u: Any) -> None:
        table = state._messages[kind]
        ident = u.message_id
        message = table.get(ident)
        if message is None:
            key = prefix + ident
            message = table[ident] = MessageState(kind=kind, message_id=ident)
            state._order[key] = None
        message.content.append(u.content)

    return upsert, chunk


def _apply_session_info(state: SessionState, u: v2.SessionInfoUpdateSessionUpdate) -> None:
    info = state.session_info
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if info is None else info.meta, meta)
    if info is None:
        info = state.session_info = SessionInfoState()
        state._order["session_info"] = None
    if u.title is not UNSET:
        info.title = u.title
    if u.updated_at is not UNSET:
        info.updated_at = u.updated_at
    if meta is not UNSET:
        info.meta = meta


def _apply_compaction(state: SessionState, u: v2.CompactionUpdateSessionUpdate) -> None:
    ident = u.compaction_id
    compaction = state.compactions.get(ident)
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if compaction is None else compaction.meta, meta)
    summary = u.summary
    if summary is not UNSET:
        summary = _as_list(summary, "/summary")
    if u.status.__class__ is not str:
        raise UsageError("acp.bad-update", "a compaction_update's status must be a string")
    if compaction is None:
        key = "compaction:" + ident
        compaction = state.compactions[ident] = CompactionState(compaction_id=ident)
        state._order[key] = None
    compaction.status = u.status
    if summary is not UNSET:
        compaction.summary = summary
    if u.error is not UNSET:
        compaction.error = u.error
    if meta is not UNSET:
        compaction.meta = meta


def _apply_compaction_chunk(state: SessionState, u: v2.CompactionSummaryChunkSessionUpdate) -> None:
    ident = u.compaction_id
    compaction = state.compactions.get(ident)
    if compaction is None:
        key = "compaction:" + ident
        compaction = state.compactions[ident] = CompactionState(compaction_id=ident)
        state._order[key] = None
    compaction.summary.append(u.content)


def _apply_subagent(state: SessionState, u: v2.SubagentUpdateSessionUpdate) -> None:
    ident = u.session_id
    child = state.subagents.get(ident)
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if child is None else child.meta, meta)
    directories = u.additional_directories
    if directories is not UNSET and directories is not None:
        directories = _as_list(directories, "/additionalDirectories")
    if child is None:
        key = "subagent:" + ident
        child = state.subagents[ident] = SubagentState(session_id=ident)
        state._order[key] = None
    if u.title is not UNSET:
        child.title = u.title
    if u.description is not UNSET:
        child.description = u.description
    if u.capabilities is not UNSET:
        child.capabilities = u.capabilities
    if u.state is not UNSET:
        child.state = u.state
    if u.cwd is not UNSET:
        child.cwd = u.cwd
    if directories is not UNSET:
        child.additional_directories = directories
    if meta is not UNSET:
        child.meta = meta


def _apply_session_message(state: SessionState, u: v2.SessionMessageSessionUpdate) -> None:
    ident = u.message_id
    message = state.session_messages.get(ident)
    meta = u.meta
    if meta is not UNSET:
        meta = apply_meta_update(None if message is None else message.meta, meta)
    content = u.content
    if content is not UNSET:
        content = _as_list(content, "/content")
    if message is None:
        key = "session_message:" + ident
        message = state.session_messages[ident] = SessionMessageState(message_id=ident)
        state._order[key] = None
    if u.sender_session_id is not UNSET:
        message.sender_session_id = u.sender_session_id
    if u.recipient_session_id is not UNSET:
        message.recipient_session_id = u.recipient_session_id
    if u.sender_message_id is not UNSET:
        message.sender_message_id = u.sender_message_id
    if u.recipient_message_id is not UNSET:
        message.recipient_message_id = u.recipient_message_id
    if content is not UNSET:
        message.content = content
    if meta is not UNSET:
        message.meta = meta


def _apply_session_message_chunk(
    state: SessionState, u: v2.SessionMessageChunkSessionUpdate
) -> None:
    ident = u.message_id
    message = state.session_messages.get(ident)
    if message is None:
        key = "session_message:" + ident
        message = state.session_messages[ident] = SessionMessageState(message_id=ident)
        state._order[key] = None
    message.content.append(u.content)


def _apply_plan(state: SessionState, u: v2.PlanUpdateSessionUpdate) -> None:
    plan = u.plan
    ident = plan.plan_id
    meta = u.meta
    if meta is not None and not isinstance(meta, dict):
        raise SchemaError("type", "/_meta", f"_meta must be an object or null, not {meta!r}")
    existing = state.plans.get(ident)
    if existing is None:
        state.plans[ident] = PlanState(plan_id=ident, plan=plan, meta=meta or None)
        state._order["plan:" + ident] = None
    else:
        existing.plan = plan
        existing.meta = meta or None


def _apply_plan_removed(state: SessionState, u: v2.PlanRemovedSessionUpdate) -> None:
    if state.plans.pop(u.plan_id, None) is not None:
        del state._order["plan:" + u.plan_id]


def _latest_rule(key: str) -> Callable[[SessionState, Any], None]:
    def latest(state: SessionState, u: Any) -> None:
        setattr(state, key, u)
        state._order[key] = None

    return latest


def _apply_usage(state: SessionState, u: v2.UsageUpdateSessionUpdate) -> None:
    """The latest usage, except ``cost``: a three-state field (omitted keeps the last
    reported cost, ``null`` clears it, a value replaces it)."""
    cost = u.cost
    if cost is UNSET:
        cost = UNSET if state.usage is None else state.usage.cost
    elif cost is None:
        cost = UNSET  # cleared: stored as absent
    state.usage = u if cost is u.cost else attrs.evolve(u, cost=cost)
    state._order["usage"] = None


def _apply_notice(state: SessionState, u: v2.NoticeSessionUpdate) -> None:
    state.notices.append(u)
    state._order["notices"] = None


def _apply_other(state: SessionState, u: v2.OtherSessionUpdate) -> None:
    state.unknown.append(u)
    state.diagnostics.append(
        Diagnostic(
            code="unknown-session-update",
            message=f"unknown sessionUpdate {u.session_update!r} kept but not applied",
            path="/sessionUpdate",
            subject=u.session_update,
        )
    )


_HANDLERS: dict[type, Callable[[SessionState, Any], Any]] = {
    v2.ToolCallUpdateSessionUpdate: _apply_tool_call,
    v2.ToolCallContentChunkSessionUpdate: _apply_tool_call_chunk,
    v2.TerminalUpdateSessionUpdate: _apply_terminal,
    v2.TerminalOutputChunkSessionUpdate: _apply_terminal_chunk,
    v2.SessionInfoUpdateSessionUpdate: _apply_session_info,
    v2.CompactionUpdateSessionUpdate: _apply_compaction,
    v2.CompactionSummaryChunkSessionUpdate: _apply_compaction_chunk,
    v2.SubagentUpdateSessionUpdate: _apply_subagent,
    v2.SessionMessageSessionUpdate: _apply_session_message,
    v2.SessionMessageChunkSessionUpdate: _apply_session_message_chunk,
    v2.PlanUpdateSessionUpdate: _apply_plan,
    v2.PlanRemovedSessionUpdate: _apply_plan_removed,
    v2.NoticeSessionUpdate: _apply_notice,
    v2.UsageUpdateSessionUpdate: _apply_usage,
    v2.OtherSessionUpdate: _apply_other,
}
_MESSAGE_CLASSES: tuple[tuple[type, type, str], ...] = (
    (v2.UserMessageSessionUpdate, v2.UserMessageChunkSessionUpdate, "user_message"),
    (v2.AgentMessageSessionUpdate, v2.AgentMessageChunkSessionUpdate, "agent_message"),
    (v2.AgentThoughtSessionUpdate, v2.AgentThoughtChunkSessionUpdate, "agent_thought"),
)
for _upsert_cls, _chunk_cls, _kind in _MESSAGE_CLASSES:
    _HANDLERS[_upsert_cls], _HANDLERS[_chunk_cls] = _message_rules(_kind)
for _latest_cls, _key in _LATEST.items():
    _HANDLERS[_latest_cls] = _latest_rule(_key)
del _upsert_cls, _chunk_cls, _kind, _latest_cls, _key


# ---- many sessions, whole JSON-RPC messages -----------------------------------------------

_load_notification = _converter.loader(v2.UpdateSessionNotification)
# sessionUpdate tag -> (loader of its class, rule), for every kind with a rule of its own
_FAST_PATH: dict[str, tuple[Any, Callable[[SessionState, Any], Any]]] = {
    attrs.fields(cls).session_update.default: (_converter.loader(cls), rule)
    for cls, rule in _HANDLERS.items()
    if cls is not v2.OtherSessionUpdate
}
_load_permission_request = _converter.loader(v2.RequestPermissionRequest)


class SessionStore:
    """The sessions of one connection, fed whole JSON-RPC messages.

    ``session/update`` notifications are applied to the session their
    ``sessionId`` names (created on first sight), and
    ``session/request_permission`` requests patch the stored tool call of a
    tool-call subject. Other messages are ignored with a diagnostic.

    Tolerant (the default), parameters are parsed as the schema's
    ``x-deserialize-*`` rules allow and every repair is a diagnostic; a
    message that still cannot be parsed or applied is skipped with a
    diagnostic (``invalid-params``, ``invalid-update``) and changes nothing.
    Strict, any such message raises instead. Diagnostics carry the source line
    in ``index`` and a path from the message root (``/params/update/...``).

    Attributes:
        sessions: the sessions by id, in first-seen order.
        diagnostics: every problem tolerated so far, in order.
        strict: whether bad messages raise.

    Example:
        >>> store = SessionStore()
        >>> store.feed(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
        ...            b'"update":{"sessionUpdate":"agent_message_chunk","messageId":"m1",'
        ...            b'"content":{"type":"text","text":"hi"}}}}\\n')
        >>> store.close()
        >>> store.sessions["s1"].agent_messages["m1"].content[0].text
        'hi'
    """

    def __init__(self, *, strict: bool = False) -> None:
        """Create an empty store.

        Args:
            strict: raise on a message that cannot be parsed or applied,
                instead of reporting it and skipping it.
        """
        self.strict = strict
        self.sessions: dict[str, SessionState] = {}
        self.diagnostics: list[Diagnostic] = []
        self._parse_diagnostics: list[Diagnostic] = []
        self._context = _Context(None if strict else self._parse_diagnostics)
        self._reader = MessageReader()
        self._pending: list[bytearray] = []  # lines after one that raised

    def session(self, session_id: str) -> SessionState:
        """The session with this id, created empty on first use."""
        state = self.sessions.get(session_id)
        if state is None:
            state = self.sessions[session_id] = SessionState(
                session_id, diagnostics=self.diagnostics
            )
        return state

    def feed(self, data: bytes) -> None:
        """Read newline-delimited JSON-RPC bytes (split anywhere) and apply each message.

        Raises:
            DecodeError: a line is not a JSON-RPC message (its number is in
                the error); the messages before it were applied. Calling again
                (``feed(b"")`` or :meth:`close`) continues after it.
            SchemaError, UsageError: strict store, a message could not be
                applied; calling again continues after it.
            UsageError: the input was closed.
        """
        self._reader.push(data)
        self._read()

    def close(self) -> None:
        """End the byte input: a last line without a newline is read.

        Raises:
            DecodeError, SchemaError, UsageError: as :meth:`feed`.
        """
        self._reader.end()
        self._read()

    def _read(self) -> None:
        """Decode and apply the lines waiting in the reader, in order.

        The usual line, a ``session/update`` notification (the reader's
        :meth:`~agentproto.acp.MessageReader.notification_params` says so) whose params
        hold exactly ``sessionId`` and an ``update`` of a kind with a rule, is applied by
        the update's own loader and rule, minus the message and wrapper objects. Anything
        else, a repair the parser reports, or bad input the loader or the rule refuses
        (``SchemaError``, ``Unrecognised``, ``UsageError``), takes the general path from
        the start of the line (the failed attempt changed nothing): the reader's
        :meth:`~agentproto.acp.MessageReader.messages` and :meth:`apply_message`. Any
        other exception is a bug and propagates. A line that raises leaves the lines
        after it waiting in the reader for the next call.
        """
        reader = self._reader
        recognise = reader.notification_params
        context = self._context
        sessions = self.sessions
        repairs = self._parse_diagnostics
        fast_path = _FAST_PATH
        for value, line, offset in reader.documents():
            params: Any = recognise(value, METHOD_SESSION_UPDATE)
            if params is not None and len(params) == 2:
                session_id: Any = params.get("sessionId")
                update: Any = params.get("update")
                if session_id.__class__ is str and update.__class__ is dict:
                    tag: Any = update.get("sessionUpdate")
                    fast = fast_path.get(tag) if tag.__class__ is str else None
                    if fast is not None:
                        try:
                            update = fast[0](update, "/update", context)
                        except (SchemaError, Unrecognised):
                            update = None
                        if update is not None and not repairs:
                            state = sessions.get(session_id) or self.session(session_id)
                            try:
                                fast[1](state, update)
                            except (SchemaError, UsageError):
                                pass
                            else:
                                continue
                        repairs.clear()
            for message in reader.messages(value, line, offset):
                self.apply_message(message)

    def apply_message(self, message: Message) -> None:
        """Apply one JSON-RPC message.

        Raises:
            SchemaError: strict store, the parameters do not match the schema
                (location from the message root) or the update cannot be
                applied (invalid base64).
            UsageError: ``message`` is not a JSON-RPC message.
        """
        if message.__class__ is Notification:
            assert isinstance(message, Notification)
            if message.method == METHOD_SESSION_UPDATE:
                self._session_update(message.params, message.line)
                return
            self._ignored(
                message.line, f"notification {message.method!r} ignored", "ignored-method"
            )
        elif message.__class__ is Request:
            assert isinstance(message, Request)
            if message.method == METHOD_REQUEST_PERMISSION:
                self._permission_request(message.params, message.line)
                return
            self._ignored(message.line, f"request {message.method!r}", "ignored-method")
        elif message.__class__ is Response:
            assert isinstance(message, Response)
            self._ignored(message.line, f"response to {message.id!r}", "ignored-message")
        else:
            raise UsageError(
                "jsonrpc.not-a-message",
                f"expected a Request, Notification or Response, not {type(message).__name__}",
            )

    def to_json(self) -> dict[str, Any]:
        """Every session as wire-named JSON: ``{"sessions": {id: {"entities": ...}}}``."""
        return {"sessions": {key: state.to_json() for key, state in self.sessions.items()}}

    # ---- internals -----------------------------------------------------------------------

    def _ignored(self, line: int, what: str, code: str) -> None:
        self.diagnostics.append(
            Diagnostic(code=code, message=f"{what} ignored", index=line or None)
        )

    def _parse(self, loader: Any, params: Any, line: int) -> Any:
        """Parse params; ``None`` when a tolerant store rejected them."""
        try:
            value = loader(params, "", self._context)
        except (SchemaError, Unrecognised) as failure:
            self._parse_diagnostics.clear()
            if isinstance(failure, Unrecognised):  # tolerant: an unknown member, required
                err = SchemaError("oneOf", failure.path, failure.detail)
            else:
                err = failure
            moved = err.at("/params")
            if self.strict:
                moved.add_note(f"line {line}")
                raise moved from failure
            self.diagnostics.append(
                Diagnostic(
                    code="invalid-params",
                    message=f"message skipped: {err.detail} [{err.keyword}]",
                    path=moved.location,
                    index=line or None,
                )
            )
            return None
        if self._parse_diagnostics:
            self._move_parse_diagnostics(line)
        return value

    def _move_parse_diagnostics(self, line: int) -> None:
        """Report the parser's repairs, located from the message root."""
        for diagnostic in self._parse_diagnostics:
            self.diagnostics.append(
                attrs.evolve(
                    diagnostic,
                    path=None if diagnostic.path is None else "/params" + diagnostic.path,
                    index=line or None,
                )
            )
        self._parse_diagnostics.clear()

    def _run(self, apply: Callable[[Any], Any], value: Any, line: int, prefix: str) -> None:
        """``apply(value)``; strict: let its error out, tolerant: report it.

        Diagnostics the state adds get the line and the ``prefix`` path.
        """
        diagnostics = self.diagnostics
        before = len(diagnostics)
        try:
            apply(value)
        except (SchemaError, UsageError) as err:
            if self.strict:
                if isinstance(err, SchemaError):
                    moved = err.at(prefix)
                    moved.add_note(f"line {line}")
                    raise moved from err
                err.add_note(f"line {line}")
                raise
            if isinstance(err, SchemaError):
                text, path = f"{err.detail} [{err.keyword}]", prefix + err.location
            else:
                text, path = str(err), prefix
            diagnostics.append(
                Diagnostic(
                    code="invalid-update",
                    message=f"update skipped, state unchanged: {text}",
                    path=path,
                    index=line or None,
                )
            )
            return
        if len(diagnostics) != before:
            for position in range(before, len(diagnostics)):
                diagnostic = diagnostics[position]
                diagnostics[position] = attrs.evolve(
                    diagnostic,
                    path=None if diagnostic.path is None else prefix + diagnostic.path,
                    index=line or None,
                )

    def _session_update(self, params: Any, line: int) -> None:
        note = self._parse(_load_notification, params, line)
        if note is not None:
            state = self.sessions.get(note.session_id) or self.session(note.session_id)
            self._run(state.apply, note.update, line, "/params/update")

    def _permission_request(self, params: Any, line: int) -> None:
        request = self._parse(_load_permission_request, params, line)
        if request is None:
            return
        state = self.session(request.session_id)
        self._run(state.apply_permission_request, request, line, "/params/subject/toolCall")
