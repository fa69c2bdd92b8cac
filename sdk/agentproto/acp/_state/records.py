"""The state records an ACP v2 client keeps: one attrs class per entity kind.

Each record holds an entity's current fields with typed attributes, what a field
resets to when cleared (the attribute's default: a tool call's ``kind`` resets
to ``other``), the stored metadata, and ``other_fields`` for fields the schema
added since the record was written. How updates patch them is described once per
kind in :mod:`agentproto.acp._state.entities`, which also renders them as JSON.
"""

from __future__ import annotations

from typing import Any, TypeAlias

import attrs

from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import _converter
from agentproto.acp._state.meta import Meta

__all__ = [
    "TOOL_CALL_STATUSES",
    "TOOL_KINDS",
    "CompactionState",
    "Entity",
    "MessageState",
    "PlanState",
    "SessionInfoState",
    "SessionMessageState",
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


@attrs.define(kw_only=True)
class _Record:
    """What every upserted entity record below shares besides its own attributes: metadata,
    added fields, wire-named JSON.

    Attributes:
        meta: the stored metadata, ``None`` for none.
        other_fields: fields the schema has that the record's class does not
            declare (the schema added them since), by Python name; a cleared
            one is absent.
    """

    meta: Meta | None = None
    other_fields: dict[str, Any] = attrs.Factory(dict)

    def to_json(self) -> dict[str, Any]:
        """The wire-named JSON of the entity.

        The id field and every field set, defaults included; a cleared or
        never-set field is absent (an empty collection too, except where
        ``[]`` differs from ``null``); ``_meta`` is absent when there is none.
        """
        from agentproto.acp._state.entities import kind_of, snapshot  # the descriptions use records

        kind = kind_of(self)
        out: dict[str, Any] = {}
        for wire, value in kind.values(self, snapshot(self)):
            if value is not None:
                out[wire] = _dump(value)
        return out


# ---- the state records ---------------------------------------------------------------------


def _shared_last(cls: type, fields: list[attrs.Attribute[Any]]) -> list[attrs.Attribute[Any]]:
    """A record's own fields first (its id leading), the shared ones after them."""
    shared = frozenset(f.name for f in attrs.fields(_Record))
    return [f for f in fields if f.name not in shared] + [f for f in fields if f.name in shared]


@attrs.define(kw_only=True, field_transformer=_shared_last)
class ToolCallState(_Record):
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


@attrs.define(kw_only=True, field_transformer=_shared_last)
class TerminalState(_Record):
    """An agent-owned terminal (``terminal:<terminalId>``).

    Its JSON shows ``output`` as ``{"data": <base64 of all bytes>}``.

    Attributes:
        terminal_id: the id.
        command: the command, ``None`` when unknown.
        cwd: the absolute working directory, ``None`` when unknown.
        output: every output byte (the last ``output`` snapshot, then the
            decoded chunks), ``None`` while no output was reported.
        exit_status: the exit information; set once the terminal exited.
        size: the terminal size, when known.
        capabilities: the client controls the terminal supports.
    """

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: bytearray | None = None
    exit_status: v2.TerminalExitStatus | None = None
    size: v2.TerminalSize | None = None
    capabilities: v2.TerminalCapabilities | None = None

    @property
    def exited(self) -> bool:
        """Whether an exit status was reported."""
        return self.exit_status is not None

    @property
    def text(self) -> str:
        """The output decoded as UTF-8 (invalid sequences replaced), ``""`` if none."""
        return bytes(self.output or b"").decode("utf-8", errors="replace")


@attrs.define(kw_only=True, field_transformer=_shared_last)
class MessageState(_Record):
    """A user message, agent message or agent thought.

    Each of the three types has its own id space: the same ``messageId`` may
    name one of each.

    Attributes:
        kind: ``"user_message"``, ``"agent_message"`` or ``"agent_thought"``
            (the entity key prefix and the upsert's ``sessionUpdate``).
        message_id: the id.
        content: the content blocks, in order.
    """

    kind: str
    message_id: str
    content: list[v2.ContentBlock] = attrs.Factory(list)


@attrs.define(kw_only=True, field_transformer=_shared_last)
class SessionInfoState(_Record):
    """The session's own information (``session_info``).

    Attributes:
        title: the session title, ``None`` when unset.
        updated_at: the RFC 3339 time of the last activity, ``None`` when unset.
    """

    title: str | None = None
    updated_at: str | None = None


@attrs.define(kw_only=True, field_transformer=_shared_last)
class CompactionState(_Record):
    """A context compaction (``compaction:<compactionId>``).

    Attributes:
        compaction_id: the id.
        status: the status of the last ``compaction_update`` (``in_progress``
            when a summary chunk created it).
        summary: the summary content blocks, in order.
        error: the error details, ``None`` when unset.
    """

    compaction_id: str
    status: str = "in_progress"
    summary: list[v2.ContentBlock] = attrs.Factory(list)
    error: str | None = None


@attrs.define(kw_only=True, field_transformer=_shared_last)
class SubagentState(_Record):
    """A child session this session owns (``subagent:<sessionId>``).

    Its JSON shows ``additionalDirectories`` as ``[]`` when set so.

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
    """

    session_id: str
    title: str | None = None
    description: str | None = None
    capabilities: v2.SubagentSessionCapabilities | None = None
    state: v2.StateUpdate | None = None
    cwd: str | None = None
    additional_directories: list[str] | None = None


@attrs.define(kw_only=True, field_transformer=_shared_last)
class SessionMessageState(_Record):
    """A message sent to or received from another session (``session_message:<messageId>``).

    Attributes:
        message_id: the id in this session's transcript.
        sender_session_id: the sending session, ``None`` when unset.
        recipient_session_id: the receiving session, ``None`` when unset.
        sender_message_id: the outgoing view's id, ``None`` when unset.
        recipient_message_id: the incoming view's id, ``None`` when unset.
        content: the content blocks, in order.
    """

    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    sender_message_id: str | None = None
    recipient_message_id: str | None = None
    content: list[v2.ContentBlock] = attrs.Factory(list)


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
