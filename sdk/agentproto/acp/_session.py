"""ACP v2 session state: every ``session/update`` upsert, applied in receive order.

Theory of operation
-------------------
A client that keeps an ACP v2 session folds the ``session/update``
notifications it receives into *entities*. :class:`SessionState` is one
session, :class:`SessionStore` the sessions of a connection (keyed by
``sessionId``) fed whole JSON-RPC messages. The rules are in
:mod:`agentproto.acp._rules`, derived from one description per entity kind
(:mod:`agentproto.acp._entities`). In short: an upsert creates its entity on an
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

Entities keep the position of their first notification. An update that raises
leaves the state exactly as it was: invalid base64 and a ``_meta`` that is
neither an object nor ``null`` raise :class:`~agentproto.SchemaError`; a
hand-built update whose id, collection, fixed field or terminal output has the
wrong Python type raises :class:`~agentproto.UsageError`. On the wire, a wrong
type in a patch field is the parser's business (tolerant parsing drops the
field with a diagnostic, strict parsing rejects the update).
:class:`SessionStore` turns each rejected message into a diagnostic when it is
tolerant, or raises when strict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from agentproto._core.converter import Unrecognised, _Context
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError, UsageError
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._entities import (
    KINDS,
    TOOL_CALL_STATUSES,
    TOOL_KINDS,
    CompactionState,
    Entity,
    MessageState,
    PlanState,
    SessionInfoState,
    SessionMessageState,
    SubagentState,
    TerminalState,
    ToolCallState,
)
from agentproto.acp._jsonrpc import Message, MessageReader, Notification, Request, Response
from agentproto.acp._rules import LATEST, TOLERATED, Rule, build_rules, tool_call_rule
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

_dump = _converter.dump
_RULES: dict[type, Rule] = build_rules(v2.SessionUpdate)
"""The rule of every member of the generated ``SessionUpdate`` union."""


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
        # entity kind -> its entities by id (the one session info under "")
        tables: dict[str, dict[str, Any]] = {name: {} for name in KINDS}
        tables["plan"] = {}
        self._tables = tables
        self.tool_calls: dict[str, ToolCallState] = tables["tool_call"]
        self.terminals: dict[str, TerminalState] = tables["terminal"]
        self.user_messages: dict[str, MessageState] = tables["user_message"]
        self.agent_messages: dict[str, MessageState] = tables["agent_message"]
        self.agent_thoughts: dict[str, MessageState] = tables["agent_thought"]
        self.compactions: dict[str, CompactionState] = tables["compaction"]
        self.subagents: dict[str, SubagentState] = tables["subagent"]
        self.session_messages: dict[str, SessionMessageState] = tables["session_message"]
        self.plans: dict[str, PlanState] = tables["plan"]
        self.available_commands: v2.AvailableCommandsUpdateSessionUpdate | None = None
        self.config_options: v2.ConfigOptionUpdateSessionUpdate | None = None
        self.usage: v2.UsageUpdateSessionUpdate | None = None
        self.state: v2.StateUpdateSessionUpdate | None = None
        self.notices: list[v2.NoticeSessionUpdate] = []
        self.unknown: list[v2.OtherSessionUpdate] = []
        self.diagnostics: list[Diagnostic] = [] if diagnostics is None else diagnostics
        # entity keys ("tool_call:c1", "session_info", "notices", ...) in first-seen order
        self._order: dict[str, None] = {}

    @property
    def session_info(self) -> SessionInfoState | None:
        """The session information, once reported."""
        info: SessionInfoState | None = self._tables["session_info"].get("")
        return info

    @session_info.setter
    def session_info(self, info: SessionInfoState | None) -> None:
        table = self._tables["session_info"]
        table.clear()
        if info is not None:
            table[""] = info

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
            UsageError: ``update`` is not a session update, or a hand-built
                one holds an id, collection, fixed field or terminal output of
                the wrong Python type. The state is unchanged.
        """
        rule = _RULES.get(update.__class__)
        if rule is None:
            raise UsageError(
                "acp.not-an-update",
                f"expected a session update, not {type(update).__name__}",
            )
        rule(self, update)

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
        if not isinstance(tool_call, v2.ToolCallUpdate):
            raise UsageError(
                "acp.bad-update", f"expected a ToolCallUpdate, not {type(tool_call).__name__}"
            )
        call: ToolCallState = tool_call_rule(self, tool_call)
        return call

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
        table = self._tables.get(kind)
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
            elif key in _LATEST_KEYS:
                entities[key] = _update_json(value)
            else:
                entities[key] = value.to_json()
        return {"entities": entities}


_LATEST_KEYS = frozenset(LATEST.values())

# ---- many sessions, whole JSON-RPC messages -----------------------------------------------

_load_notification = _converter.loader(v2.UpdateSessionNotification)
# sessionUpdate tag -> (loader of its class, rule), for every kind with a rule of its own
# (not the tolerated ones: their diagnostics need the store's location)
_FAST_PATH: dict[str, tuple[Any, Rule]] = {
    attrs.fields(cls).session_update.default: (_converter.loader(cls), rule)
    for cls, rule in _RULES.items()
    if rule not in TOLERATED
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
