"""The reducer's rules for streamed items: text and reasoning messages, tool calls, results.

Each rule takes the event and ``commit``: with ``commit`` false it only finds what
applying would report (:meth:`~agentproto.agui.Conversation.check`) and changes
nothing; with ``commit`` true it applies. The checks come first in every rule, so that
both modes report the same diagnostics. The rules themselves are described in
:mod:`._conversation`.

Events are taken as ``Any``: this module is compiled in the compiled build, where a
parameter typed with an event class would have mypyc check every field read from it
against the schema's type, and a hand-built event holding a wrong one must get a
diagnostic here, not a ``TypeError``.
"""

from __future__ import annotations

from typing import Any, Final

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.readonly import thaw
from agentproto.agui._protocol.kinds import (
    ASSISTANT,
    ENCRYPTABLE_ROLES,
    FAMILIES,
    REASONING_ROLES,
    TEXT_ROLES,
    TOOL,
    TOOL_CALL_SUBTYPE,
)
from agentproto.agui._protocol.wire import _converter
from agentproto.agui._reduce.records import (
    _NOTHING,
    Change,
    _Call,
    _Entry,
    _merge,
    _problem,
    _Store,
)

__all__: list[str] = []

# The message families: event type -> (the roles its messages may have, the default role).
_ROLES: Final[dict[str, tuple[frozenset[str], str]]] = {
    kind: (roles, family.defaults["role"])
    for family, roles in ((FAMILIES["text"], TEXT_ROLES), (FAMILIES["reasoning"], REASONING_ROLES))
    for kind in (family.start, *family.continuations)
}


def _role_stripped(event: Any, role: str, default: str) -> Diagnostic:
    """An enumeration value the runtime cannot build a message for, stripped."""
    return Diagnostic(
        code="unknown-member-stripped",
        message=f"{event.type} for {event.message_id!r}: role {role!r} names no message"
        f" kind this runtime knows; stripped (the message is {default!r})",
        path="/role",
        subject=event.message_id,
    )


def _bad_delta(event: Any, code: str, item_id: str) -> Change:
    """A hand-built CONTENT or ARGS event whose delta is not a string, skipped."""
    return _problem(
        code, f"{event.type} for {item_id!r}: delta is not a string; skipped", subject=item_id
    )


class _ItemRules(_Store):
    """Rules for the events of streamed items (a mixin of the conversation)."""

    __slots__ = ()

    # -- text and reasoning messages

    def _start(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_START or REASONING_MESSAGE_START."""
        roles, default = _ROLES[event.type]
        role = event.role or default
        message_id = event.message_id
        name = getattr(event, "name", None)
        diagnostics: tuple[Diagnostic, ...] = ()
        if role not in roles:  # an unknown enumeration value: stripped, the default holds
            diagnostics = (_role_stripped(event, role, default),)
            role = default
        entry = self._by_id.get(message_id)
        if entry is not None:
            if entry.role not in roles or not entry.start_text():
                return _problem(
                    "message.role-mismatch",
                    f"{event.type} for {message_id!r}, which is a {entry.role} message"
                    " whose content cannot be streamed; skipped",
                    subject=message_id,
                )
            if entry.role != role:
                diagnostics += (
                    Diagnostic(
                        code="message.role-mismatch",
                        message=f"{event.type} for {message_id!r} says role {role!r};"
                        f" the message stays {entry.role!r}",
                        subject=message_id,
                    ),
                )
            established = entry.fields.get("name")
            if name is not None and established is not None and name != established:
                diagnostics += (
                    Diagnostic(
                        code="message.name-mismatch",
                        message=f"{event.type} for {message_id!r} says name {name!r};"
                        f" the message keeps {established!r}",
                        subject=message_id,
                    ),
                )
        if not commit:
            return Change(diagnostics=diagnostics)
        created = entry is None
        if entry is None:
            entry = _Entry(message_id, role)
            entry.text = []
            if name is not None:
                entry.fields["name"] = name
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            self._append(entry)
        elif name is not None and "name" not in entry.fields:  # established values stand
            entry.fields["name"] = name
        self._open_text.add(message_id)
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        if created:
            return Change(messages=(message_id,), created=(message_id,), diagnostics=diagnostics)
        if not diagnostics:
            return entry.change
        return Change(messages=(message_id,), diagnostics=diagnostics)

    def _content(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_CONTENT or REASONING_MESSAGE_CONTENT."""
        roles = _ROLES[event.type][0]
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles or not entry.start_text():
            return self._no_message(event, entry)
        delta = event.delta
        if type(delta) is not str:
            return _bad_delta(event, "message.invalid-delta", event.message_id)
        if not commit:
            return _NOTHING
        metadata = event.metadata
        if delta:
            entry.text.append(delta)  # type: ignore[union-attr]
        elif not metadata:
            return _NOTHING
        if metadata:
            entry.metadata = _merge(entry.metadata, metadata)
        entry.cached = None
        self._snapshot = None
        return entry.change

    def _end(self, event: Any, commit: bool) -> Change:
        """TEXT_MESSAGE_END or REASONING_MESSAGE_END."""
        roles = _ROLES[event.type][0]
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles:
            return self._no_message(event, entry)
        if not commit:
            return _NOTHING
        self._open_text.discard(entry.id)
        if not event.metadata:
            return _NOTHING
        entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    @staticmethod
    def _no_message(event: Any, entry: _Entry | None) -> Change:
        message_id = event.message_id
        if entry is None:
            return _problem(
                "message.unknown",
                f"{event.type} for {message_id!r}: no such message; skipped",
                subject=message_id,
            )
        return _problem(
            "message.role-mismatch",
            f"{event.type} for {message_id!r}, which is a {entry.role} message"
            " whose content cannot be streamed; skipped",
            subject=message_id,
        )

    # -- tool calls

    def _streaming_assistant(self, owner: str | None) -> _Entry | None:
        """The latest assistant message of ``owner`` still being streamed (an open text
        message, or one with an open tool call), or ``None``. Only open items are
        looked at, never the whole conversation."""
        by_id, calls = self._by_id, self._calls
        found: dict[int, _Entry] = {}
        for entry in (
            *(by_id[i] for i in self._open_text if i in by_id),
            *(calls[c].parent for c in self._open_calls if c in calls),
        ):
            if entry.role == ASSISTANT and entry.fields.get("subagentRunId") == owner:
                found[id(entry)] = entry
        if len(found) <= 1:
            return next(iter(found.values()), None)
        return next(e for e in reversed(self._entries) if id(e) in found)

    def _tool_parent(self, event: Any, diagnostics: list[Diagnostic]) -> Any:
        """The parent message of a new tool call: a record (:class:`_Entry`), the id of
        an assistant message to create for it, or ``None`` when no message can hold it
        (``Any``: the id is the event's, whatever a hand-built event holds)."""
        parent_id = event.parent_message_id
        if parent_id is not None:
            entry = self._by_id.get(parent_id)
            if entry is None:
                return parent_id
            if entry.role == ASSISTANT:
                return entry
            diagnostics.append(
                Diagnostic(
                    code="tool-call.parent-not-assistant",
                    message=f"TOOL_CALL_START {event.tool_call_id!r}: parentMessageId"
                    f" {parent_id!r} names a {entry.role} message; the call gets an"
                    " assistant message of its own",
                    subject=parent_id,
                )
            )
        else:
            # a call without a parent joins its own owner's streaming assistant message,
            # never another owner's (a tool call inherits its message's attribution)
            streaming = self._streaming_assistant(event.subagent_run_id)
            if streaming is not None:
                return streaming
        own = self._by_id.get(event.tool_call_id)
        if own is None:
            return event.tool_call_id
        return own if own.role == ASSISTANT else None

    def _tool_start(self, event: Any, commit: bool) -> Change:
        call_id = event.tool_call_id
        call = self._calls.get(call_id)
        if call is not None:  # a closed call reopened
            if not commit:
                return _NOTHING
            self._open_calls.add(call_id)
            if not event.metadata:
                return _NOTHING
            call.metadata = _merge(call.metadata, event.metadata)
            self._touch(call.parent)
            return call.parent.change
        diagnostics: list[Diagnostic] = []
        parent = self._tool_parent(event, diagnostics)
        if parent is None:
            diagnostics.append(
                Diagnostic(
                    code="tool-call.no-parent",
                    message=f"TOOL_CALL_START {call_id!r}: no assistant message can hold"
                    " the call (its id is taken by another message); skipped",
                    subject=call_id,
                )
            )
        if parent is None or not commit:
            return Change(diagnostics=tuple(diagnostics))
        created = isinstance(parent, str)
        if isinstance(parent, str):
            parent = _Entry(parent, ASSISTANT)
            if event.subagent_run_id is not None:
                parent.fields["subagentRunId"] = event.subagent_run_id
            self._append(parent)
        call = _Call(call_id, event.tool_call_name, parent)
        if event.metadata:
            call.metadata = _merge(None, event.metadata)
        if parent.calls is None:
            parent.calls = []
        parent.calls.append(call)
        self._calls[call_id] = call
        self._open_calls.add(call_id)
        self._touch(parent)
        return Change(
            messages=(parent.id,),
            created=(parent.id,) if created else (),
            diagnostics=tuple(diagnostics),
        )

    def _unknown_call(self, event: Any) -> Change:
        return _problem(
            "tool-call.unknown",
            f"{event.type} for {event.tool_call_id!r}: no such tool call; skipped",
            subject=event.tool_call_id,
        )

    def _tool_args(self, event: Any, commit: bool) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        delta = event.delta
        if type(delta) is not str:
            return _bad_delta(event, "tool-call.invalid-delta", event.tool_call_id)
        if not commit:
            return _NOTHING
        if delta:
            call.args.append(delta)
        elif not event.metadata:
            return _NOTHING
        if event.metadata:
            call.metadata = _merge(call.metadata, event.metadata)
        parent = call.parent
        parent.cached = None
        self._snapshot = None
        return parent.change

    def _tool_end(self, event: Any, commit: bool) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        if not commit:
            return _NOTHING
        self._open_calls.discard(call.id)
        if not event.metadata:
            return _NOTHING
        call.metadata = _merge(call.metadata, event.metadata)
        self._touch(call.parent)
        return call.parent.change

    def _tool_result(self, event: Any, commit: bool) -> Change:
        message_id = event.message_id
        if message_id in self._by_id:
            return _problem(
                "tool-result.duplicate-id",
                f"TOOL_CALL_RESULT {message_id!r}: a message with this id exists; skipped",
                subject=message_id,
            )
        content = event.content
        if not isinstance(content, (str, list)):
            return _problem(
                "tool-result.invalid-content",
                f"TOOL_CALL_RESULT {message_id!r}: content is neither text nor parts; skipped",
                subject=message_id,
            )
        if not commit:
            return _NOTHING
        entry = _Entry(message_id, TOOL)
        entry.fields["content"] = (
            content if isinstance(content, str) else thaw(_converter.dump(content))
        )
        entry.fields["toolCallId"] = event.tool_call_id
        if event.subagent_run_id is not None:
            entry.fields["subagentRunId"] = event.subagent_run_id
        if event.metadata:
            entry.metadata = _merge(None, event.metadata)
        self._place_result(entry, self._calls.get(event.tool_call_id))
        return Change(messages=(message_id,), created=(message_id,))

    def _place_result(self, entry: _Entry, call: _Call | None) -> None:
        """After the call's message and the tool messages following it (else last)."""
        entries = self._entries
        if call is None or entries[-1] is call.parent:
            entries.append(entry)
        else:
            position = entries.index(call.parent) + 1
            while position < len(entries) and entries[position].role == TOOL:
                position += 1
            entries.insert(position, entry)
        self._by_id[entry.id] = entry
        self._snapshot = None

    def _encrypted_value(self, event: Any, commit: bool) -> Change:
        entity_id = event.entity_id
        if event.subtype == TOOL_CALL_SUBTYPE:
            call = self._calls.get(entity_id)
            target = None if call is None else call.fields
            owner = None if call is None else call.parent
            what = "tool call"
        else:
            owner = self._by_id.get(entity_id)
            target = None if owner is None else owner.fields
            what = "message"
            if owner is not None and owner.role not in ENCRYPTABLE_ROLES:
                return _problem(
                    "encrypted-value.not-storable",
                    f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: an {owner.role} message"
                    " holds no encrypted value; dropped",
                    subject=entity_id,
                )
        if target is None or owner is None:
            return _problem(
                "encrypted-value.unknown-entity",
                f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: no such {what}; dropped",
                subject=entity_id,
            )
        if not commit:
            return _NOTHING
        target["encryptedValue"] = event.encrypted_value
        if event.encrypted_value_type is None:
            target.pop("encryptedValueType", None)
        else:
            target["encryptedValueType"] = event.encrypted_value_type
        self._touch(owner)
        return owner.change
