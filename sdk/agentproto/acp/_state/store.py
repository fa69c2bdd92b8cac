"""The sessions of one ACP connection, fed whole JSON-RPC messages.

:class:`SessionStore` reads newline-delimited JSON-RPC bytes with the shared line
reader (:class:`~agentproto.acp.MessageReader`), applies each ``session/update``
to the :class:`~agentproto.acp.SessionState` its ``sessionId`` names and each
``session/request_permission`` tool-call subject to the stored tool call, and
turns every rejected message into a diagnostic when tolerant, or raises when
strict. The usual line, a ``session/update`` of a kind with a rule, takes a
short way (the update's own loader and rule, no message objects); anything
else goes through the general path.

Child sessions. A ``subagent_update`` on a session announces the child session
its ``sessionId`` names the first time that id appears in one (later ones update
it). The subagents RFD makes the order the agent's duty: the announcement comes
before any traffic bearing the child's id. A store sees a connection from the
outside, where the first traffic of any session may be a top-level session's (it
does not follow ``session/new``), so it cannot hold traffic back until an
announcement that may never come; it applies every update as it arrives and,
when an announcement names a session that already had traffic, reports the
broken order with an ``unannounced-session`` diagnostic (strict or not: the
state is what in-order delivery gives, since sessions do not share entities).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs

from agentproto._core.describe import describe
from agentproto._core.diagnostics import DEFAULT_MAX_DIAGNOSTICS, Diagnostic, DiagnosticLog
from agentproto._core.errors import LimitError, SchemaError, UsageError
from agentproto._core.wire.converter import Context, Unrecognised
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.jsonrpc import Message, MessageReader, Notification, Request, Response
from agentproto.acp._protocol.wire import (
    CONVERTER,
    METHOD_REQUEST_PERMISSION,
    METHOD_SESSION_UPDATE,
)
from agentproto.acp._state.rules import TOLERATED, Rule
from agentproto.acp._state.session import DEFAULT_MAX_ENTITIES, RULES, SessionState

__all__ = ["DEFAULT_MAX_SESSIONS", "SessionStore"]

DEFAULT_MAX_SESSIONS = 10_000
"""Default :attr:`SessionStore.max_sessions`: a connection serves a handful of sessions
(each child session of a subagent is one); ten thousand stops a peer inventing ids."""


_load_notification = CONVERTER.loader(v2.UpdateSessionNotification)
# sessionUpdate tag -> (loader of its class, rule), for every kind with a rule of its own
# (not the tolerated ones: their diagnostics need the store's location)
_FAST_PATH: dict[str, tuple[Any, Rule]] = {
    attrs.fields(cls).session_update.default: (CONVERTER.loader(cls), rule)
    for cls, rule in RULES.items()
    if rule not in TOLERATED
}
_SUBAGENT: Final = v2.SubagentUpdateSessionUpdate
_load_permission_request = CONVERTER.loader(v2.RequestPermissionRequest)


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
    in ``line`` and a path from the message root (``/params/update/...``). A
    ``subagent_update`` announcing a session that already had traffic gets an
    ``unannounced-session`` diagnostic (see the module documentation).

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

    def __init__(
        self,
        *,
        strict: bool = False,
        max_diagnostics: int | None = DEFAULT_MAX_DIAGNOSTICS,
        max_sessions: int | None = DEFAULT_MAX_SESSIONS,
        max_entities: int | None = DEFAULT_MAX_ENTITIES,
    ) -> None:
        """Create an empty store.

        Args:
            strict: raise on a message that cannot be parsed or applied,
                instead of reporting it and skipping it.
            max_diagnostics: most diagnostics kept in :attr:`diagnostics` (every
                session's included); past it one ``diagnostics-limit`` entry
                counts the rest (``None``: keep all).
            max_sessions: most sessions kept (``None``: no limit). A message
                for one more session is refused with
                :class:`~agentproto.LimitError` (strict) or skipped with an
                ``invalid-update`` diagnostic naming the limit.
            max_entities: each session's
                :attr:`~agentproto.acp.SessionState.max_entities`, refused or
                skipped the same way.

        Raises:
            UsageError: a limit is not a positive integer or ``None``.
        """
        if max_sessions is not None and (max_sessions.__class__ is not int or max_sessions < 1):
            raise UsageError("acp.invalid-limit", "max_sessions must be a positive integer or None")
        SessionState(max_entities=max_entities)  # checks the limit now, not at the first update
        self.strict = strict
        self.max_sessions = max_sessions
        self.max_entities = max_entities
        self.sessions: dict[str, SessionState] = {}
        self.diagnostics: list[Diagnostic] = DiagnosticLog(max_diagnostics)
        self._parse_diagnostics: list[Diagnostic] = []
        self._context = Context(None if strict else self._parse_diagnostics)
        self._reader = MessageReader()
        self._announced: set[str] = set()  # child session ids a subagent_update named

    def session(self, session_id: str) -> SessionState:
        """The session with this id, created empty on first use.

        Raises:
            LimitError: creating it would keep more than ``max_sessions``.
        """
        state = self.sessions.get(session_id)
        if state is None:
            room = self.max_sessions
            if room is not None and len(self.sessions) >= room:
                raise LimitError(
                    f"the store keeps {room} sessions; session {describe(session_id)} not kept",
                    limit="max_sessions",
                    value=room,
                )
            state = self.sessions[session_id] = SessionState(
                session_id, diagnostics=self.diagnostics, max_entities=self.max_entities
            )
        return state

    def feed(self, data: bytes) -> None:
        """Read newline-delimited JSON-RPC bytes (split anywhere) and apply each message.

        Raises:
            DecodeError: a line is not a JSON-RPC message (its number is in
                the error); the messages before it were applied. Calling again
                (``feed(b"")`` or :meth:`close`) continues after it.
            SchemaError, UsageError, LimitError: strict store, a message could not be
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
                            try:
                                state = sessions.get(session_id) or self.session(session_id)
                                fast[1](state, update)
                            except (SchemaError, UsageError, LimitError):
                                pass
                            else:
                                if update.__class__ is _SUBAGENT:
                                    self._announced_child(session_id, update, line)
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
            self._ignored(message.line, f"response to {describe(message.id)}", "ignored-message")
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
        self.diagnostics.append(Diagnostic(code=code, message=f"{what} ignored", line=line or None))

    def _parse(self, loader: Any, params: Any, line: int) -> Any:
        """Parse params; ``None`` when a tolerant store rejected them."""
        try:
            value = loader(params, "", self._context)
        except (SchemaError, Unrecognised) as failure:
            self._parse_diagnostics.clear()
            # tolerant: an unknown member, required
            err = failure.as_error() if isinstance(failure, Unrecognised) else failure
            moved = err.at("/params")
            if self.strict:
                moved.add_note(f"line {line}")
                raise moved from failure
            self.diagnostics.append(
                Diagnostic(
                    code="invalid-params",
                    message=f"message skipped: {err.detail} [{err.keyword}]",
                    path=moved.location,
                    line=line or None,
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
                    line=line or None,
                )
            )
        self._parse_diagnostics.clear()

    def _run(self, apply: Callable[[Any], Any], value: Any, line: int, prefix: str) -> bool:
        """``apply(value)``; strict: let its error out, tolerant: report it (``False``).

        Diagnostics the state adds get the line and the ``prefix`` path.
        """
        diagnostics = self.diagnostics
        before = len(diagnostics)
        try:
            apply(value)
        except (SchemaError, UsageError, LimitError) as err:
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
                    line=line or None,
                )
            )
            return False
        if len(diagnostics) != before:
            for position in range(before, len(diagnostics)):
                diagnostic = diagnostics[position]
                diagnostics[position] = attrs.evolve(
                    diagnostic,
                    path=None if diagnostic.path is None else prefix + diagnostic.path,
                    line=line or None,
                )
        return True

    def _session_update(self, params: Any, line: int) -> None:
        note = self._parse(_load_notification, params, line)
        if note is None:
            return
        applied = self._run(
            lambda update: self.session(note.session_id).apply(update),
            note.update,
            line,
            "/params/update",
        )
        if applied and note.update.__class__ is _SUBAGENT:
            self._announced_child(note.session_id, note.update, line)

    def _announced_child(self, session_id: str, update: Any, line: int) -> None:
        """An applied ``subagent_update``: its first announcement of a child session that
        already had traffic is reported (the announcement comes first)."""
        child: str = update.session_id
        if child in self._announced:
            return  # an update of a child announced already
        self._announced.add(child)
        if child in self.sessions:
            self.diagnostics.append(
                Diagnostic(
                    code="unannounced-session",
                    message=f"session {describe(child)} had traffic before this subagent_update "
                    f"on session {describe(session_id)} announced it (the announcement comes "
                    "first); that traffic was applied as it came",
                    path="/params/update/sessionId",
                    subject=child,
                    line=line or None,
                )
            )

    def _permission_request(self, params: Any, line: int) -> None:
        request = self._parse(_load_permission_request, params, line)
        if request is not None:
            self._run(
                lambda subject: self.session(request.session_id).apply_permission_request(subject),
                request,
                line,
                "/params/subject/toolCall",
            )
