"""The AG-UI conversation reducer: verified events in, messages and state out.

Theory of operation
-------------------
This module owns every rule for *applying* AG-UI events (SPEC-NOTES, AG-UI:
"Snapshot-delta pattern", "State, messages, run input", "Activity", "Metadata",
"Subagents and attribution"; the activity seed). It sits at the end of the
pipeline (bytes → SSE → boundary → enforcement → chunk expansion →
verification → here) and may assume a verified stream, but it never fails and
never corrupts its state on anything else: an event it cannot apply changes
nothing and yields a :class:`~agentproto._core.diagnostics.Diagnostic`.

**Records, not typed objects.** The generated message classes are mutable, so
the conversation keeps its own records (``_Entry`` for a message, ``_Call`` for
a tool call) made of plain JSON in wire names, and typed messages are
*materialised* from them on demand: built fresh from a deep copy, cached on the
record, and dropped from the cache when that record changes. A caller holding a
materialised message therefore cannot reach the records; mutating it only
changes what later reads of the same cached object show until the message
changes again (don't). ``to_json()`` and run input are always built from the
records, never from the cache.

**Costs.** Text, reasoning and argument deltas are appended to a list of parts
and joined lazily, when the message is read (O(1) amortised per delta). The
state belongs to the reducer alone (a snapshot is copied in when it arrives), so
state deltas go through :func:`~agentproto._core.patch.apply_patch_in_place`:
O(operations) whatever the size of the state or the width of the containers
on the path, atomic through an undo log. Activity content is an immutable value
patched by :func:`~agentproto._core.patch.apply_patch`, which copies only the
containers on the touched paths. Nothing copies a whole document per event;
snapshots and event payloads are copied once, when they arrive (O(event size)),
so that a caller changing an event afterwards cannot reach the state.

**Rules**, event by event:

* ``TEXT_MESSAGE_START`` creates a message with the event's role (absent means
  ``assistant``), ``name`` and ``subagentRunId``; for an id that exists (a
  closed message reopened, or an assistant message a tool call created) it
  reopens it, and content appends. ``TEXT_MESSAGE_CONTENT`` appends its delta;
  ``TEXT_MESSAGE_END`` closes. ``REASONING_MESSAGE_*`` do the same for role
  ``reasoning``. An event naming a message that does not exist, or one of a
  role it cannot build, is skipped with a diagnostic.
* ``TOOL_CALL_START`` attaches a tool call (``arguments`` empty) to a parent
  assistant message: the one ``parentMessageId`` names (created, with the
  event's attribution, when it does not exist yet); without
  ``parentMessageId``, the last message when it is an assistant message still
  being streamed (an open text message or an open tool call), else a new
  assistant message whose id is the tool call id (as the reference client
  does; so too when ``parentMessageId`` names a message that is not an
  assistant message, with a diagnostic). A tool call has no attribution of its
  own: it inherits its parent message's ``subagentRunId``. A START for a known
  tool call id reopens it. ``TOOL_CALL_ARGS`` appends to
  ``function.arguments``.
* ``TOOL_CALL_RESULT`` mints a tool message (``content`` a string or content
  parts, ``toolCallId``, ``subagentRunId``), placed right after the assistant
  message holding the call and the tool messages already following it (a
  follow-up text streamed before the result stays after it), or last when the
  call is unknown. An id that already exists is skipped with a diagnostic.
* ``REASONING_ENCRYPTED_VALUE`` stores ``encryptedValue`` and
  ``encryptedValueType`` (both replaced as a pair) on the message (subtype
  ``message``) or tool call (subtype ``tool-call``) named by ``entityId``; an
  unknown entity, or an activity message (which has no such field), yields a
  diagnostic and nothing else.
* ``STATE_SNAPSHOT`` replaces the state outright (any JSON, ``null`` and ``0``
  included). ``STATE_DELTA`` patches it atomically; a patch that fails leaves
  the state exactly as it was, with a ``state.patch-failed`` diagnostic ("Failed
  to apply state patch"); the next snapshot resyncs. The baseline is the run
  input's state (absent means ``{}``).
* ``MESSAGES_SNAPSHOT``: messages with known ids are replaced in place, new ids
  appended in snapshot order, messages it omits dropped — except activity and
  reasoning messages, which survive unless the snapshot carries at least one
  message of that role (it is then the complete set for that role).
* ``ACTIVITY_SNAPSHOT`` for an unseen id creates an activity message at the end
  (its position of arrival). For an activity message that exists, it replaces
  ``content`` and ``activityType`` and re-mints attribution (the message's
  ``subagentRunId`` becomes the snapshot's, absent included); with
  ``replace: false`` it leaves content, type and owner as they stand. For a
  message that is not an activity message it is skipped with a diagnostic (the
  delta rule, applied to snapshots too).
* ``ACTIVITY_DELTA`` patches ``content`` atomically and its ``activityType``
  replaces the message's; the owner stays. A delta for a missing or
  non-activity message, a patch that fails, and a result that is not an object
  are skipped with a diagnostic; such a delta changes nothing (metadata
  included).
* Metadata merges key by key, last write wins, no recursion, onto the event's
  target: ``TEXT_MESSAGE_*`` → the message; ``REASONING_MESSAGE_*`` → the
  reasoning message; ``TOOL_CALL_START/ARGS/END`` → the tool call;
  ``TOOL_CALL_RESULT`` → the tool message it mints; ``ACTIVITY_*`` → the
  activity message (a replacing snapshot replaces content, never metadata; a
  ``replace: false`` snapshot still merges its metadata). Every other event
  merges nowhere.
* ``RUN_*``, ``STEP_*``, ``REASONING_START/END``, ``SUBAGENT_*``, ``RAW`` and
  ``CUSTOM`` change nothing here. ``*_CHUNK`` events must be expanded first;
  one that arrives anyway changes nothing and yields a diagnostic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, cast

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import PatchError, SchemaError, UsageError
from agentproto._core.patch import apply_patch, apply_patch_in_place
from agentproto._core.readonly import readonly, thaw
from agentproto._core.unset import UNSET
from agentproto.agui import _generated as g
from agentproto.agui._generated import ActivityMessage, Event, Message, RunAgentInput, ToolCall
from agentproto.agui._wire import make_converter

__all__ = ["Change", "Conversation"]

_converter = make_converter()

_TEXT_ROLES: Final = frozenset({"developer", "system", "assistant", "user"})
_REASONING_ROLES: Final = frozenset({"reasoning"})
_MISSING: Any = object()


@attrs.frozen(kw_only=True)
class Change:
    """What one :meth:`Conversation.apply` changed.

    Attributes:
        messages: ids of the messages created or updated, in the order they were
            touched (a tool call's change is its parent message's).
        created: the subset of ``messages`` that are new.
        removed: ids of the messages a ``MESSAGES_SNAPSHOT`` dropped.
        state: whether the state changed.
        diagnostics: the tolerated problems the event caused (an event that
            could not be applied changes nothing and says why here).
    """

    messages: tuple[str, ...] = ()
    created: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    state: bool = False
    diagnostics: tuple[Diagnostic, ...] = ()

    def __bool__(self) -> bool:
        """True when messages or state changed (diagnostics alone do not count)."""
        return bool(self.messages or self.removed or self.state)


_NOTHING: Final = Change()
_STATE_CHANGED: Final = Change(state=True)


def _problem(
    code: str, message: str, *, subject: str | None = None, path: str | None = None
) -> Change:
    return Change(diagnostics=(Diagnostic(code=code, message=message, subject=subject, path=path),))


# ---- records ----------------------------------------------------------------------------


class _Call:
    """A tool call: its name, argument parts and other wire members."""

    __slots__ = ("args", "fields", "id", "metadata", "name", "parent")

    def __init__(self, call_id: str, name: str, parent: _Entry) -> None:
        self.id = call_id
        self.name = name
        self.parent = parent
        self.args: list[str] = []
        self.fields: dict[str, Any] = {}
        self.metadata: dict[str, Any] | None = None

    def arguments(self) -> str:
        args = self.args
        if len(args) > 1:
            args[:] = ["".join(args)]
        return args[0] if args else ""

    def wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments()},
        }
        wire.update(self.fields)
        if self.metadata is not None:
            wire["metadata"] = self.metadata
        return wire


class _Entry:
    """A message: id, role, streamed text parts, tool calls, metadata, other members.

    ``fields`` holds the wire members other than ``id``, ``role``, ``metadata``,
    ``toolCalls`` and, when ``text`` is not ``None``, ``content`` (then ``text``
    is the content, as parts). Values in ``fields`` are this record's own and are
    never changed in place once stored (they may be shared with patch results).
    """

    __slots__ = ("cached", "calls", "change", "fields", "id", "metadata", "role", "text")

    def __init__(self, message_id: str, role: str) -> None:
        self.id = message_id
        self.role = role
        self.fields: dict[str, Any] = {}
        self.text: list[str] | None = None
        self.calls: list[_Call] | None = None
        self.metadata: dict[str, Any] | None = None
        self.cached: Message | None = None
        self.change = Change(messages=(message_id,))

    def start_text(self) -> bool:
        """Make ``content`` appendable; False when it is not text (content parts)."""
        if self.text is not None:
            return True
        content = self.fields.get("content")
        if content is None:
            self.fields.pop("content", None)
            self.text = []
            return True
        if isinstance(content, str):
            del self.fields["content"]
            self.text = [content]
            return True
        return False

    def content(self) -> str:
        text = self.text
        assert text is not None
        if len(text) > 1:
            text[:] = ["".join(text)]
        return text[0] if text else ""

    def wire(self) -> dict[str, Any]:
        """The message's wire JSON; shares this record's values (copy before handing out)."""
        wire: dict[str, Any] = {"id": self.id, "role": self.role}
        wire.update(self.fields)
        if self.text is not None:
            wire["content"] = self.content()
        if self.calls is not None:
            wire["toolCalls"] = [call.wire() for call in self.calls]
        if self.metadata is not None:
            wire["metadata"] = self.metadata
        return wire

    def materialise(self) -> Message:
        """A typed message built from a deep copy of the record (cached)."""
        cached = self.cached
        if cached is None:
            cached = self.cached = _load_message(thaw(self.wire()))
        return cached


def _load_message(wire: dict[str, Any]) -> Message:
    return cast(Message, _converter.load(wire, Message))


def _entry_from_message(message: Any) -> _Entry:
    """A record from a typed message (validated; raises SchemaError when it is not)."""
    wire = thaw(_converter.dump(message))
    _load_message(wire)  # the same check a parsed message passed
    entry = _Entry(wire.pop("id"), wire.pop("role"))
    metadata = wire.pop("metadata", None)
    if metadata is not None:
        entry.metadata = metadata
    calls = wire.pop("toolCalls", None) if entry.role == "assistant" else None
    if calls is not None:
        entry.calls = []
        for raw in calls:
            function = raw["function"]
            call = _Call(raw["id"], function["name"], entry)
            call.args = [function["arguments"]]
            call.metadata = raw.get("metadata")
            call.fields = {
                k: v for k, v in raw.items() if k not in ("id", "type", "function", "metadata")
            }
            entry.calls.append(call)
    entry.fields = wire
    if entry.role in _TEXT_ROLES or entry.role == "reasoning":
        content = wire.get("content")
        if isinstance(content, str):
            del wire["content"]
            entry.text = [content]
    return entry


def _merge(target: dict[str, Any] | None, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata merge: key by key, last write wins, no recursion (values copied)."""
    merged = {} if target is None else target
    for key, value in metadata.items():
        merged[key] = thaw(value)
    return merged


_VALUE_OPS: Final = (g.AddOperation, g.ReplaceOperation, g.TestOperation)
_FROM_OPS: Final = (g.MoveOperation, g.CopyOperation)
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def _own_ops(patch: Any) -> list[dict[str, Any]] | None:
    """A patch as wire dicts whose values are copies (``None`` when it is not a list).

    Only the members applying needs are kept (extras are open material).
    """
    if patch.__class__ is not list and not isinstance(patch, (list, tuple)):
        return None
    ops: list[dict[str, Any]] = []
    for op in patch:
        cls = op.__class__
        if cls in _VALUE_OPS:
            value = op.value
            ops.append(
                {
                    "op": op.op,
                    "path": op.path,
                    "value": value if value.__class__ in _SCALARS else thaw(value),
                }
            )
        elif cls is g.RemoveOperation:
            ops.append({"op": op.op, "path": op.path})
        elif cls in _FROM_OPS:
            ops.append({"op": op.op, "path": op.path, "from": op.from_})
        elif isinstance(op, Mapping):
            ops.append({k: thaw(v) if k == "value" else v for k, v in op.items()})
        else:  # something else: let apply_patch judge what it finds
            wire: dict[str, Any] = {
                "op": getattr(op, "op", None),
                "path": getattr(op, "path", None),
            }
            value = getattr(op, "value", _MISSING)
            if value is not _MISSING and value is not UNSET:
                wire["value"] = thaw(value)
            from_ = getattr(op, "from_", _MISSING)
            if from_ is not _MISSING and from_ is not UNSET:
                wire["from"] = from_
            ops.append(wire)
    return ops


# ---- the reducer --------------------------------------------------------------------------


class Conversation:
    """The messages, activities and state an AG-UI event stream builds.

    Feed it verified events (after chunk expansion) with :meth:`apply`; read
    :attr:`messages`, :meth:`message`, :attr:`activities`, :attr:`state`,
    :meth:`state_json` and :meth:`to_json`. The rules are in this module's
    docstring.

    Reading never copies the whole conversation: :attr:`state` is a read-only
    view, and messages are typed objects built when first read after a change
    and cached. Those objects belong to the conversation's cache: mutating one
    cannot change the conversation (its records, :meth:`to_json`, the next run
    input), but later reads may return that same object until the message
    changes, so treat them as read-only.

    Args:
        messages: the conversation so far (copied; ids must be unique).
        state: the baseline state; omitted means ``{}`` (copied).

    Raises:
        SchemaError: a message does not match the schema.
        UsageError: two messages share an id.
    """

    __slots__ = (
        "_by_id",
        "_calls",
        "_entries",
        "_open_calls",
        "_open_text",
        "_snapshot",
        "_state",
    )

    def __init__(self, *, messages: Iterable[Message] = (), state: Any = UNSET) -> None:
        self._entries: list[_Entry] = []
        self._by_id: dict[str, _Entry] = {}
        self._calls: dict[str, _Call] = {}
        self._open_text: set[str] = set()
        self._open_calls: set[str] = set()
        self._snapshot: tuple[Message, ...] | None = None
        self._state: Any = {} if state is UNSET else thaw(state)
        for message in messages:
            entry = _entry_from_message(message)
            if entry.id in self._by_id:
                raise UsageError(
                    "conversation.duplicate-id", f"two messages share the id {entry.id!r}"
                )
            self._entries.append(entry)
            self._by_id[entry.id] = entry
        self._index_calls()

    @classmethod
    def from_input(cls, run_input: RunAgentInput) -> Conversation:
        """The conversation a run starts from: the input's messages and state.

        An absent ``state`` means ``{}``.
        """
        state = UNSET if run_input.state is None else run_input.state
        return cls(messages=run_input.messages, state=state)

    # ---- reading ----------------------------------------------------------------------

    @property
    def messages(self) -> tuple[Message, ...]:
        """Every message, in conversation order (a snapshot; see the class notes)."""
        snapshot = self._snapshot
        if snapshot is None:
            snapshot = self._snapshot = tuple(entry.materialise() for entry in self._entries)
        return snapshot

    def message(self, message_id: str) -> Message | None:
        """The message with this id, or ``None``."""
        entry = self._by_id.get(message_id)
        return None if entry is None else entry.materialise()

    def tool_call(self, tool_call_id: str) -> ToolCall | None:
        """The tool call with this id (as held by its parent message), or ``None``."""
        call = self._calls.get(tool_call_id)
        if call is None:
            return None
        message = call.parent.materialise()
        for tool_call in getattr(message, "tool_calls", None) or ():
            if tool_call.id == tool_call_id:
                return cast(ToolCall, tool_call)
        return None  # pragma: no cover - the index and the records agree

    @property
    def activities(self) -> tuple[ActivityMessage, ...]:
        """The activity messages, in conversation order."""
        return tuple(
            cast(ActivityMessage, e.materialise()) for e in self._entries if e.role == "activity"
        )

    @property
    def state(self) -> Any:
        """The state as a read-only view (O(1), no copy); :meth:`state_json` copies.

        The view is a live, read-only window on the reducer's state: it shows
        the state as it is when read, deltas included. Take :meth:`state_json`
        for a snapshot that later events do not change.
        """
        return readonly(self._state)

    def state_json(self) -> Any:
        """An independent deep copy of the state."""
        return thaw(self._state)

    def to_json(self) -> dict[str, Any]:
        """``{"messages": [...], "state": ...}`` in wire names, as an independent copy.

        Each message is the JSON ``make_converter().dump(message)`` gives for
        the corresponding item of :attr:`messages`.
        """
        return {
            "messages": [thaw(entry.wire()) for entry in self._entries],
            "state": thaw(self._state),
        }

    def _fresh_messages(self, *, skip_roles: frozenset[str] = frozenset()) -> list[Message]:
        """New typed messages, independent of the cache (for run input)."""
        return [_load_message(thaw(e.wire())) for e in self._entries if e.role not in skip_roles]

    def __repr__(self) -> str:
        return f"<Conversation: {len(self._entries)} messages>"

    # ---- applying ---------------------------------------------------------------------

    def apply(self, event: Event) -> Change:
        """Apply one event and say what changed.

        Args:
            event: a typed AG-UI event, as enforcement and chunk expansion
                deliver it.

        Returns:
            the :class:`Change`; problems the spec tolerates are in its
            ``diagnostics`` and leave the conversation as it was.

        Raises:
            UsageError: ``event`` is not an AG-UI event object.
        """
        handler = _HANDLERS.get(event.__class__)
        if handler is None:
            raise UsageError(
                "conversation.not-an-event",
                f"Conversation.apply() takes typed AG-UI events, not {type(event).__name__}",
            )
        return handler(self, event)

    def _touch(self, entry: _Entry) -> None:
        entry.cached = None
        self._snapshot = None

    def _append(self, entry: _Entry) -> None:
        self._entries.append(entry)
        self._by_id[entry.id] = entry
        self._snapshot = None

    def _index_calls(self) -> None:
        self._calls = {
            call.id: call for entry in self._entries if entry.calls for call in entry.calls
        }

    # -- text and reasoning messages

    def _start(
        self,
        event: Any,
        roles: frozenset[str],
        role: str,
        name: str | None,
    ) -> Change:
        message_id = event.message_id
        kind = event.type
        if role not in roles:
            return _problem(
                "message.role-mismatch",
                f"{kind} for {message_id!r} with role {role!r}; skipped",
                subject=message_id,
            )
        entry = self._by_id.get(message_id)
        created = entry is None
        diagnostics: tuple[Diagnostic, ...] = ()
        if entry is None:
            entry = _Entry(message_id, role)
            entry.text = []
            if name is not None:
                entry.fields["name"] = name
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            self._append(entry)
        else:
            if entry.role not in roles or not entry.start_text():
                return _problem(
                    "message.role-mismatch",
                    f"{kind} for {message_id!r}, which is a {entry.role} message"
                    " whose content cannot be streamed; skipped",
                    subject=message_id,
                )
            if entry.role != role:
                diagnostics = (
                    Diagnostic(
                        code="message.role-mismatch",
                        message=f"{kind} for {message_id!r} says role {role!r};"
                        f" the message stays {entry.role!r}",
                        subject=message_id,
                    ),
                )
            if name is not None:
                entry.fields["name"] = name
        self._open_text.add(message_id)
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        if created:
            return Change(messages=(message_id,), created=(message_id,), diagnostics=diagnostics)
        return (
            entry.change
            if not diagnostics
            else Change(messages=(message_id,), diagnostics=diagnostics)
        )

    def _content(self, event: Any, roles: frozenset[str]) -> Change:
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles or not entry.start_text():
            return self._no_message(event, entry)
        delta = event.delta
        if delta.__class__ is not str:
            return _problem(
                "message.invalid-delta",
                f"{event.type} for {event.message_id!r}: delta is not a string; skipped",
                subject=event.message_id,
            )
        if delta:
            entry.text.append(delta)  # type: ignore[union-attr]
        elif not event.metadata:
            return _NOTHING
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        entry.cached = None
        self._snapshot = None
        return entry.change

    def _end(self, event: Any, roles: frozenset[str]) -> Change:
        entry = self._by_id.get(event.message_id)
        if entry is None or entry.role not in roles:
            return self._no_message(event, entry)
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

    def _text_start(self, event: g.TextMessageStartEvent) -> Change:
        return self._start(event, _TEXT_ROLES, event.role or "assistant", event.name)

    def _text_content(self, event: g.TextMessageContentEvent) -> Change:
        return self._content(event, _TEXT_ROLES)

    def _text_end(self, event: g.TextMessageEndEvent) -> Change:
        return self._end(event, _TEXT_ROLES)

    def _reasoning_start(self, event: g.ReasoningMessageStartEvent) -> Change:
        return self._start(event, _REASONING_ROLES, event.role or "reasoning", None)

    def _reasoning_content(self, event: g.ReasoningMessageContentEvent) -> Change:
        return self._content(event, _REASONING_ROLES)

    def _reasoning_end(self, event: g.ReasoningMessageEndEvent) -> Change:
        return self._end(event, _REASONING_ROLES)

    # -- tool calls

    def _is_streaming(self, entry: _Entry) -> bool:
        if entry.id in self._open_text:
            return True
        open_calls = self._open_calls
        return bool(entry.calls) and any(call.id in open_calls for call in entry.calls or ())

    def _new_assistant(self, message_id: str, subagent_run_id: str | None) -> _Entry:
        entry = _Entry(message_id, "assistant")
        if subagent_run_id is not None:
            entry.fields["subagentRunId"] = subagent_run_id
        self._append(entry)
        return entry

    def _tool_parent(
        self, event: g.ToolCallStartEvent, diagnostics: list[Diagnostic]
    ) -> tuple[_Entry | None, bool]:
        """The parent message of a new tool call, and whether it was created."""
        parent_id = event.parent_message_id
        if parent_id is not None:
            entry = self._by_id.get(parent_id)
            if entry is None:
                return self._new_assistant(parent_id, event.subagent_run_id), True
            if entry.role == "assistant":
                return entry, False
            diagnostics.append(
                Diagnostic(
                    code="tool-call.parent-not-assistant",
                    message=f"TOOL_CALL_START {event.tool_call_id!r}: parentMessageId"
                    f" {parent_id!r} names a {entry.role} message; the call gets an"
                    " assistant message of its own",
                    subject=parent_id,
                )
            )
        elif self._entries:
            last = self._entries[-1]
            if last.role == "assistant" and self._is_streaming(last):
                return last, False
        own = self._by_id.get(event.tool_call_id)
        if own is None:
            return self._new_assistant(event.tool_call_id, event.subagent_run_id), True
        if own.role == "assistant":
            return own, False
        return None, False

    def _tool_start(self, event: g.ToolCallStartEvent) -> Change:
        call_id = event.tool_call_id
        call = self._calls.get(call_id)
        if call is not None:  # a closed call reopened
            self._open_calls.add(call_id)
            if event.metadata:
                call.metadata = _merge(call.metadata, event.metadata)
                self._touch(call.parent)
                return call.parent.change
            return _NOTHING
        diagnostics: list[Diagnostic] = []
        parent, created = self._tool_parent(event, diagnostics)
        if parent is None:
            diagnostics.append(
                Diagnostic(
                    code="tool-call.no-parent",
                    message=f"TOOL_CALL_START {call_id!r}: no assistant message can hold"
                    " the call (its id is taken by another message); skipped",
                    subject=call_id,
                )
            )
            return Change(diagnostics=tuple(diagnostics))
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

    def _tool_args(self, event: g.ToolCallArgsEvent) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        delta = event.delta
        if delta.__class__ is not str:
            return _problem(
                "tool-call.invalid-delta",
                f"TOOL_CALL_ARGS for {event.tool_call_id!r}: delta is not a string; skipped",
                subject=event.tool_call_id,
            )
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

    def _tool_end(self, event: g.ToolCallEndEvent) -> Change:
        call = self._calls.get(event.tool_call_id)
        if call is None:
            return self._unknown_call(event)
        self._open_calls.discard(call.id)
        if not event.metadata:
            return _NOTHING
        call.metadata = _merge(call.metadata, event.metadata)
        self._touch(call.parent)
        return call.parent.change

    def _tool_result(self, event: g.ToolCallResultEvent) -> Change:
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
        entry = _Entry(message_id, "tool")
        entry.fields["content"] = (
            content if isinstance(content, str) else thaw(_converter.dump(content))
        )
        entry.fields["toolCallId"] = event.tool_call_id
        if event.subagent_run_id is not None:
            entry.fields["subagentRunId"] = event.subagent_run_id
        if event.metadata:
            entry.metadata = _merge(None, event.metadata)
        call = self._calls.get(event.tool_call_id)
        entries = self._entries
        if call is None or entries[-1] is call.parent:
            entries.append(entry)
        else:
            position = entries.index(call.parent) + 1
            while position < len(entries) and entries[position].role == "tool":
                position += 1
            entries.insert(position, entry)
        self._by_id[message_id] = entry
        self._snapshot = None
        return Change(messages=(message_id,), created=(message_id,))

    def _encrypted_value(self, event: g.ReasoningEncryptedValueEvent) -> Change:
        entity_id = event.entity_id
        if event.subtype == "tool-call":
            call = self._calls.get(entity_id)
            if call is not None:
                self._store_encrypted(call.fields, event)
                self._touch(call.parent)
                return call.parent.change
            what = "tool call"
        else:
            entry = self._by_id.get(entity_id)
            if entry is not None:
                if entry.role == "activity":
                    return _problem(
                        "encrypted-value.not-storable",
                        f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: an activity message"
                        " holds no encrypted value; dropped",
                        subject=entity_id,
                    )
                self._store_encrypted(entry.fields, event)
                self._touch(entry)
                return entry.change
            what = "message"
        return _problem(
            "encrypted-value.unknown-entity",
            f"REASONING_ENCRYPTED_VALUE for {entity_id!r}: no such {what}; dropped",
            subject=entity_id,
        )

    @staticmethod
    def _store_encrypted(fields: dict[str, Any], event: g.ReasoningEncryptedValueEvent) -> None:
        fields["encryptedValue"] = event.encrypted_value
        if event.encrypted_value_type is None:
            fields.pop("encryptedValueType", None)
        else:
            fields["encryptedValueType"] = event.encrypted_value_type

    # -- state

    def _state_snapshot(self, event: g.StateSnapshotEvent) -> Change:
        self._state = thaw(event.snapshot)
        return _STATE_CHANGED

    def _state_delta(self, event: g.StateDeltaEvent) -> Change:
        ops = _own_ops(event.delta)
        if ops is None:
            return _problem(
                "state.patch-failed",
                "Failed to apply state patch: delta is not a list",
                path="/delta",
            )
        try:
            # the state is the reducer's own (snapshots are copied in), so it is patched
            # in place: O(operations), however wide the containers on the path are
            self._state = apply_patch_in_place(self._state, ops)
        except PatchError as exc:
            return _problem(
                "state.patch-failed",
                f"Failed to apply state patch: {exc}; the state is unchanged",
                path=f"/delta/{exc.index}",
            )
        return _STATE_CHANGED if ops else _NOTHING

    # -- messages snapshot

    def _messages_snapshot(self, event: g.MessagesSnapshotEvent) -> Change:
        diagnostics: list[Diagnostic] = []
        incoming: dict[str, _Entry] = {}
        for index, message in enumerate(event.messages):
            try:
                entry = _entry_from_message(message)
            except (SchemaError, TypeError, KeyError, AttributeError) as exc:
                diagnostics.append(
                    Diagnostic(
                        code="messages.invalid",
                        message=f"MESSAGES_SNAPSHOT: message {index} is not a valid message"
                        f" ({exc}); skipped",
                        path=f"/messages/{index}",
                    )
                )
                continue
            if entry.id in incoming:
                diagnostics.append(
                    Diagnostic(
                        code="messages.duplicate-id",
                        message=f"MESSAGES_SNAPSHOT carries {entry.id!r} twice; the last wins",
                        subject=entry.id,
                        path=f"/messages/{index}",
                    )
                )
            incoming[entry.id] = entry
        roles = {entry.role for entry in incoming.values()}
        keep_activity = "activity" not in roles
        keep_reasoning = "reasoning" not in roles
        entries: list[_Entry] = []
        touched: list[str] = []
        removed: list[str] = []
        for entry in self._entries:
            replacement = incoming.pop(entry.id, None)
            if replacement is not None:
                entries.append(replacement)
                touched.append(entry.id)
            elif (entry.role == "activity" and keep_activity) or (
                entry.role == "reasoning" and keep_reasoning
            ):
                entries.append(entry)
            else:
                removed.append(entry.id)
        created = list(incoming)
        entries.extend(incoming.values())
        self._entries = entries
        self._by_id = {entry.id: entry for entry in entries}
        self._index_calls()
        self._open_text = {i for i in self._open_text if i in self._by_id}
        self._open_calls = {i for i in self._open_calls if i in self._calls}
        self._snapshot = None
        return Change(
            messages=(*touched, *created),
            created=tuple(created),
            removed=tuple(removed),
            diagnostics=tuple(diagnostics),
        )

    # -- activities

    def _activity_snapshot(self, event: g.ActivitySnapshotEvent) -> Change:
        message_id = event.message_id
        if not isinstance(event.content, dict):
            return _problem(
                "activity.not-object",
                f"ACTIVITY_SNAPSHOT for {message_id!r}: content is not an object; skipped",
                subject=message_id,
            )
        entry = self._by_id.get(message_id)
        if entry is None:
            entry = _Entry(message_id, "activity")
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            if event.subagent_run_id is not None:
                entry.fields["subagentRunId"] = event.subagent_run_id
            if event.metadata:
                entry.metadata = _merge(None, event.metadata)
            self._append(entry)
            return Change(messages=(message_id,), created=(message_id,))
        if entry.role != "activity":
            return _problem(
                "activity.not-activity",
                f"ACTIVITY_SNAPSHOT for {message_id!r}, which is a {entry.role} message,"
                " not an activity message; skipped",
                subject=message_id,
            )
        if event.replace is not False:
            entry.fields["activityType"] = event.activity_type
            entry.fields["content"] = thaw(event.content)
            if event.subagent_run_id is None:
                entry.fields.pop("subagentRunId", None)
            else:
                entry.fields["subagentRunId"] = event.subagent_run_id
        elif not event.metadata:
            return _NOTHING
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    def _activity_delta(self, event: g.ActivityDeltaEvent) -> Change:
        message_id = event.message_id
        entry = self._by_id.get(message_id)
        if entry is None or entry.role != "activity":
            why = "no such message" if entry is None else f"it is a {entry.role} message"
            return _problem(
                "activity.delta-skipped",
                f"ACTIVITY_DELTA for {message_id!r} skipped: {why}, not an activity message",
                subject=message_id,
            )
        ops = _own_ops(event.patch)
        if ops is None:
            return _problem(
                "activity.patch-failed",
                f"Failed to apply activity patch for {message_id!r}: patch is not a list",
                subject=message_id,
                path="/patch",
            )
        try:
            content = apply_patch(entry.fields["content"], ops)
        except PatchError as exc:
            return _problem(
                "activity.patch-failed",
                f"Failed to apply activity patch for {message_id!r}: {exc};"
                " the activity is unchanged",
                subject=message_id,
                path=f"/patch/{exc.index}",
            )
        if not isinstance(content, dict):
            return _problem(
                "activity.not-object",
                f"ACTIVITY_DELTA for {message_id!r}: the patched content would not be an"
                " object; the activity is unchanged",
                subject=message_id,
            )
        entry.fields["content"] = content
        entry.fields["activityType"] = event.activity_type
        if event.metadata:
            entry.metadata = _merge(entry.metadata, event.metadata)
        self._touch(entry)
        return entry.change

    # -- everything else

    def _nothing(self, event: Any) -> Change:
        return _NOTHING

    def _chunk(self, event: Any) -> Change:
        return _problem(
            "event.not-expanded",
            f"{event.type} reached the conversation unexpanded; chunk events must go"
            " through chunk expansion first; ignored",
            subject=event.type,
        )


_Handler = Callable[[Conversation, Any], Change]

_HANDLERS: dict[type, _Handler] = {
    g.TextMessageStartEvent: Conversation._text_start,
    g.TextMessageContentEvent: Conversation._text_content,
    g.TextMessageEndEvent: Conversation._text_end,
    g.ReasoningMessageStartEvent: Conversation._reasoning_start,
    g.ReasoningMessageContentEvent: Conversation._reasoning_content,
    g.ReasoningMessageEndEvent: Conversation._reasoning_end,
    g.ToolCallStartEvent: Conversation._tool_start,
    g.ToolCallArgsEvent: Conversation._tool_args,
    g.ToolCallEndEvent: Conversation._tool_end,
    g.ToolCallResultEvent: Conversation._tool_result,
    g.ReasoningEncryptedValueEvent: Conversation._encrypted_value,
    g.StateSnapshotEvent: Conversation._state_snapshot,
    g.StateDeltaEvent: Conversation._state_delta,
    g.MessagesSnapshotEvent: Conversation._messages_snapshot,
    g.ActivitySnapshotEvent: Conversation._activity_snapshot,
    g.ActivityDeltaEvent: Conversation._activity_delta,
    g.TextMessageChunkEvent: Conversation._chunk,
    g.ToolCallChunkEvent: Conversation._chunk,
    g.ReasoningMessageChunkEvent: Conversation._chunk,
    g.RunStartedEvent: Conversation._nothing,
    g.RunFinishedEvent: Conversation._nothing,
    g.RunErrorEvent: Conversation._nothing,
    g.StepStartedEvent: Conversation._nothing,
    g.StepFinishedEvent: Conversation._nothing,
    g.ReasoningStartEvent: Conversation._nothing,
    g.ReasoningEndEvent: Conversation._nothing,
    g.SubagentStartedEvent: Conversation._nothing,
    g.SubagentFinishedEvent: Conversation._nothing,
    g.SubagentErrorEvent: Conversation._nothing,
    g.RawEvent: Conversation._nothing,
    g.CustomEvent: Conversation._nothing,
}
