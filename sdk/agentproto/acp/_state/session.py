"""ACP v2 session state: every ``session/update`` upsert, applied in receive order.

Theory of operation
-------------------
A client that keeps an ACP v2 session folds the ``session/update``
notifications it receives into *entities*. :class:`SessionState` is one
session; :class:`~agentproto.acp.SessionStore` (:mod:`agentproto.acp._state.store`)
keeps the sessions of a connection, fed whole JSON-RPC messages. The rules are in
:mod:`agentproto.acp._state.rules`, derived from one description per entity kind
(:mod:`agentproto.acp._state.entities`). In short: an upsert creates its entity on an
unseen id and patches it later (omitted = unchanged, ``None`` = reset to the
default, a value replaces whole; ``[]`` clears a collection, except a
subagent's ``additionalDirectories``), its top-level ``_meta`` is a metadata
patch (:func:`~agentproto.acp.apply_meta_update`); chunks append in receive
order (a terminal's base64-decoded bytes, each chunk on its own); plans are
replaced whole; latest-value kinds keep their last update, notices their
order; an update of an unknown kind, or of a kind without a rule, is kept in
:attr:`SessionState.unknown` with a diagnostic. An unknown tool kind *shows*
as ``other`` (:attr:`ToolCallState.display_kind`), an unknown status *counts*
as in progress (:attr:`ToolCallState.effective_status`).

Entities keep the position of their first notification. A session keeps at most
``max_entities`` items (entities, notices and unknown updates together); one more
raises :class:`~agentproto.LimitError`. An update that raises
leaves the state exactly as it was: invalid base64 and a ``_meta`` that is
neither an object nor ``null`` raise :class:`~agentproto.SchemaError`; a
hand-built update whose id, collection, fixed field or terminal output has the
wrong Python type raises :class:`~agentproto.UsageError`. On the wire, a wrong
type in a patch field is the parser's business (tolerant parsing drops the
field with a diagnostic, strict parsing rejects the update).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from agentproto._core.diagnostics import Diagnostic, DiagnosticLog
from agentproto._core.errors import LimitError, SchemaError, UsageError
from agentproto._core.wire.source import function_source
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER
from agentproto.acp._state import entities as records
from agentproto.acp._state.entities import ENTITY_NAMES
from agentproto.acp._state.rules import LATEST, Rule, build_rules, tool_call_rule

__all__ = ["DEFAULT_MAX_ENTITIES", "SessionState", "rule_source"]

DEFAULT_MAX_ENTITIES = 100_000
"""Default :attr:`SessionState.max_entities`: far beyond a real session (a long coding
session keeps thousands of tool calls), low enough that a peer inventing ids is stopped
at about a hundred megabytes of entities."""

_dump = CONVERTER.dump
RULES: dict[type, Rule] = build_rules(v2.SessionUpdate)
"""The rule of every member of the generated ``SessionUpdate`` union."""


def rule_source(update_class: type) -> str:
    """The Python source of the rule :meth:`SessionState.apply` folds an update of
    ``update_class`` with (``ToolCallUpdate``: that of :meth:`SessionState.apply_tool_call`),
    for a maintainer to read. Example::

        from agentproto.acp import schema
        from agentproto.acp._state.session import rule_source
        print(rule_source(schema.ToolCallUpdateSessionUpdate))

    A derived upsert rule is read from the sealed ``_generated_rules_v2`` module (or, for
    a class a caller made, from what was compiled); a chunk rule shows the function
    every chunk kind shares, a rule of its own its definition.

    Raises:
        UsageError: ``update_class`` is no session update class.
    """
    rule = tool_call_rule if update_class is v2.ToolCallUpdate else RULES.get(update_class)
    if rule is None:
        name = getattr(update_class, "__name__", repr(update_class))
        raise UsageError("acp.not-an-update", f"no rule folds a {name}")
    return function_source(rule)


def _update_json(update: Any) -> dict[str, Any]:
    """An update's wire JSON without its ``sessionUpdate`` tag."""
    out: dict[str, Any] = _dump(update)
    out.pop("sessionUpdate", None)
    return out


# ---- the session --------------------------------------------------------------------------


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
        entity_tables: every entity kind's table by kind name (``tool_call``,
            ``terminal``, ...; the attributes above are these same tables), what the
            upsert rules write to.
        entity_order: the key of every entity, in the order it first arrived (a
            dict used as an ordered set; what :meth:`to_json` lists).

    Example:
        >>> from agentproto.acp import parse_session_update
        >>> state = SessionState("s1")
        >>> state.apply(parse_session_update(
        ...     {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Read"}))
        >>> state.tool_calls["c1"].status
        'pending'
    """

    def __init__(
        self,
        session_id: str | None = None,
        *,
        diagnostics: list[Diagnostic] | None = None,
        max_entities: int | None = DEFAULT_MAX_ENTITIES,
    ) -> None:
        """Create an empty session.

        Args:
            session_id: the session's id, when known.
            diagnostics: the list to report tolerated problems to (a new one
                by default; a store shares its own).
            max_entities: most items the session keeps: entities, notices and
                unknown updates together (``None``: no limit). An update that
                would add one more raises :class:`~agentproto.LimitError` and
                changes nothing; updates of entities already kept still apply.

        Raises:
            UsageError: ``max_entities`` is not a positive integer or ``None``.
        """
        if max_entities is not None and (max_entities.__class__ is not int or max_entities < 1):
            raise UsageError("acp.invalid-limit", "max_entities must be a positive integer or None")
        self.session_id = session_id
        self.max_entities = max_entities
        # entity kind -> its entities by id (the one session info under "")
        tables: dict[str, dict[str, Any]] = {name: {} for name in ENTITY_NAMES}
        tables["plan"] = {}
        self.entity_tables = tables
        self.tool_calls: dict[str, records.ToolCallState] = tables["tool_call"]
        self.terminals: dict[str, records.TerminalState] = tables["terminal"]
        self.user_messages: dict[str, records.MessageState] = tables["user_message"]
        self.agent_messages: dict[str, records.MessageState] = tables["agent_message"]
        self.agent_thoughts: dict[str, records.MessageState] = tables["agent_thought"]
        self.compactions: dict[str, records.CompactionState] = tables["compaction"]
        self.subagents: dict[str, records.SubagentState] = tables["subagent"]
        self.session_messages: dict[str, records.SessionMessageState] = tables["session_message"]
        self.plans: dict[str, records.PlanState] = tables["plan"]
        self.available_commands: v2.AvailableCommandsUpdateSessionUpdate | None = None
        self.config_options: v2.ConfigOptionUpdateSessionUpdate | None = None
        self.usage: v2.UsageUpdateSessionUpdate | None = None
        self.state: v2.StateUpdateSessionUpdate | None = None
        self.notices: list[v2.NoticeSessionUpdate] = []
        self.unknown: list[v2.OtherSessionUpdate] = []
        self.diagnostics: list[Diagnostic] = DiagnosticLog() if diagnostics is None else diagnostics
        # entity keys ("tool_call:c1", "session_info", "notices", ...) in first-seen order
        self.entity_order: dict[str, None] = {}

    @property
    def session_info(self) -> records.SessionInfoState | None:
        """The session information, once reported."""
        info: records.SessionInfoState | None = self.entity_tables["session_info"].get("")
        return info

    @session_info.setter
    def session_info(self, info: records.SessionInfoState | None) -> None:
        table = self.entity_tables["session_info"]
        table.clear()
        if info is not None:
            table[""] = info

    def __repr__(self) -> str:
        return f"<SessionState {self.session_id!r}: {len(self.entity_order)} entities>"

    def __eq__(self, other: object) -> bool:
        """Same entities in the same order, same latest values (diagnostics ignored)."""
        if not isinstance(other, SessionState):
            return NotImplemented
        return (
            list(self.entity_order) == list(other.entity_order)
            and all(self.entity(key) == other.entity(key) for key in self.entity_order)
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
            LimitError: the update would add an item past ``max_entities``.
                The state is unchanged.
            UsageError: ``update`` is not a session update, or a hand-built
                one holds an id, collection, fixed field or terminal output of
                the wrong Python type. The state is unchanged.
        """
        rule = RULES.get(update.__class__)
        if rule is None:
            raise UsageError(
                "acp.not-an-update",
                f"expected a session update, not {type(update).__name__}",
            )
        rule(self, update)

    def apply_tool_call(self, tool_call: v2.ToolCallUpdate) -> records.ToolCallState:
        """Apply a tool call upsert that is not a notification (a permission subject's).

        Args:
            tool_call: the ``toolCall`` of a ``session/request_permission``
                tool-call subject; it patches the stored call exactly like a
                ``tool_call_update``, ``_meta`` included.

        Returns:
            The stored tool call.

        Raises:
            SchemaError, UsageError, LimitError: as :meth:`apply`.
        """
        if not isinstance(tool_call, v2.ToolCallUpdate):
            raise UsageError(
                "acp.bad-update", f"expected a ToolCallUpdate, not {type(tool_call).__name__}"
            )
        call: records.ToolCallState = tool_call_rule(self, tool_call)
        return call

    def apply_permission_request(self, request: v2.RequestPermissionRequest) -> None:
        """Apply a ``session/request_permission`` request's tool-call subject, if any.

        Only a subject of type ``tool_call`` touches the state (its
        ``toolCall`` patches the stored call, creating it when unseen); other
        subjects and the request's own fields describe the prompt only.

        Raises:
            SchemaError, UsageError, LimitError: as :meth:`apply`.
        """
        subject = request.subject
        if isinstance(subject, v2.ToolCallRequestPermissionSubject):
            self.apply_tool_call(subject.tool_call)

    def replay(self, updates: Iterable[v2.SessionUpdate]) -> None:
        """Apply a recorded log of updates in order, exactly as live delivery does.

        Metadata is never reset implicitly: replaying over a state that holds
        stale keys keeps those the log does not remove.

        Raises:
            SchemaError, UsageError, LimitError: as :meth:`apply`, for the first bad
                update; the updates before it stay applied, it and the rest
                are not. A note on the error gives its 0-based index.
        """
        for index, update in enumerate(updates):
            try:
                self.apply(update)
            except (SchemaError, UsageError, LimitError) as err:
                err.add_note(f"update {index} of the replayed log")
                raise

    # ---- reading ----------------------------------------------------------------------

    def keys(self) -> list[str]:
        """The entity keys in first-seen order (``tool_call:c1``, ``session_info``, ...)."""
        return list(self.entity_order)

    def entity(self, key: str) -> Any:
        """The entity (or latest value) under an entity key.

        Returns:
            An :data:`Entity`, the latest update of a latest-value kind, or the
            list of notices for ``notices``.

        Raises:
            KeyError: no such entity.
        """
        kind, _, ident = key.partition(":")
        table = self.entity_tables.get(kind)
        if table is not None:
            return table[ident]
        value = self.notices or None if key == "notices" else None
        if key in _LATEST_KEYS:
            value = getattr(self, key)
        if value is None:
            raise KeyError(key)
        return value

    def entities(self) -> Iterator[tuple[str, Any]]:
        """Every entity key with its entity (see :meth:`entity`), in first-seen order."""
        for key in self.entity_order:
            yield key, self.entity(key)

    def to_json(self) -> dict[str, Any]:
        """The session as wire-named JSON: ``{"entities": {key: entity, ...}}``.

        Each entity holds its id field and its current fields, defaults
        included; a cleared or never-set field is absent (a subagent's
        ``additionalDirectories`` shows ``[]`` when set so); ``_meta`` is
        absent when there is none. Latest-value kinds show their last update
        without ``sessionUpdate``; ``notices`` is the list of notices. When
        updates of unknown kinds were kept, ``"unknown"`` lists each one's raw
        payload (``sessionUpdate`` included), in receive order: the schema says
        to preserve them when storing, replaying or forwarding.
        """
        entities: dict[str, Any] = {}
        for key, value in self.entities():
            if isinstance(value, list):
                entities[key] = [_update_json(notice) for notice in value]
            elif key in _LATEST_KEYS:
                entities[key] = _update_json(value)
            else:
                entities[key] = value.to_json()
        if not self.unknown:
            return {"entities": entities}
        return {"entities": entities, "unknown": [_dump(update) for update in self.unknown]}


_LATEST_KEYS = frozenset(LATEST.values())
