"""The reducer's records: messages and tool calls as plain JSON, and what a change did.

The generated message classes are mutable, so :class:`~agentproto.agui.Conversation`
keeps its own records (:class:`Entry` for a message, :class:`Call` for a tool call)
made of plain JSON in wire names, and materialises typed messages from them on demand
(see :mod:`.conversation`, whose rules keep them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast, get_args

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.patch.ops import NodeCount, check_operation_count
from agentproto._core.readonly import thaw
from agentproto._core.unset import UNSET
from agentproto.agui import _generated as g
from agentproto.agui._generated import Message
from agentproto.agui._protocol.kinds import (
    ASSISTANT,
    REASONING_ROLES,
    TEXT_ROLES,
    check_members,
    has_member,
)
from agentproto.agui._protocol.wire import CONVERTER

__all__ = ["Change"]

_MISSING: Final[Any] = object()

# The wire members the records write, checked against the generated classes: a
# regeneration that renames one fails here, not in messages that no longer parse.
check_members(g.ActivityMessage, "id", "role", "activityType", "content", "subagentRunId")
check_members(g.ToolMessage, "content", "toolCallId", "metadata", "subagentRunId")
check_members(g.AssistantMessage, "content", "toolCalls", "name", "subagentRunId")
check_members(g.ToolCall, "id", "type", "function", "encryptedValue", "encryptedValueType")
check_members(g.FunctionCall, "name", "arguments")


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


NOTHING: Final = Change()
_STATE_CHANGED: Final = Change(state=True)


def problem(
    code: str, message: str, *, subject: str | None = None, path: str | None = None
) -> Change:
    return Change(diagnostics=(Diagnostic(code=code, message=message, subject=subject, path=path),))


# ---- records ----------------------------------------------------------------------------


class Call:
    """A tool call: its name, argument parts and other wire members."""

    __slots__ = ("args", "fields", "id", "metadata", "name", "parent")

    def __init__(self, call_id: str, name: str, parent: Entry) -> None:
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


class Entry:
    """A message: id, role, streamed text parts, tool calls, metadata, other members.

    ``fields`` holds the wire members other than ``id``, ``role``, ``metadata``,
    ``toolCalls`` and, when ``text`` is not ``None``, ``content`` (then ``text``
    is the content, as parts). Values in ``fields`` are this record's own and are
    never changed in place once stored (they may be shared with patch results).
    """

    __slots__ = ("cached", "calls", "change", "fields", "id", "metadata", "nodes", "role", "text")

    def __init__(self, message_id: str, role: str) -> None:
        self.id = message_id
        self.role = role
        self.fields: dict[str, Any] = {}
        self.text: list[str] | None = None
        self.calls: list[Call] | None = None
        self.metadata: dict[str, Any] | None = None
        self.cached: Message | None = None
        self.change = Change(messages=(message_id,))
        self.nodes: NodeCount | None = None  # an activity's content size, once measured

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
            cached = self.cached = load_message(thaw(self.wire()))
        return cached


def load_message(wire: dict[str, Any]) -> Message:
    return cast(Message, CONVERTER.load(wire, Message))


def entry_from_message(message: Any) -> Entry:
    """A record from a typed message (validated; raises SchemaError when it is not)."""
    wire = thaw(CONVERTER.dump(message))
    load_message(wire)  # the same check a parsed message passed
    entry = Entry(wire.pop("id"), wire.pop("role"))
    metadata = wire.pop("metadata", None)
    if metadata is not None:
        entry.metadata = metadata
    calls = wire.pop("toolCalls", None) if entry.role == ASSISTANT else None
    if calls is not None:
        entry.calls = []
        for raw in calls:
            function = raw["function"]
            call = Call(raw["id"], function["name"], entry)
            call.args = [function["arguments"]]
            call.metadata = raw.get("metadata")
            call.fields = {
                k: v for k, v in raw.items() if k not in ("id", "type", "function", "metadata")
            }
            entry.calls.append(call)
    entry.fields = wire
    if entry.role in TEXT_ROLES or entry.role in REASONING_ROLES:
        content = wire.get("content")
        if isinstance(content, str):
            del wire["content"]
            entry.text = [content]
    return entry


def merge_metadata(target: dict[str, Any] | None, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata merge: key by key, last write wins, no recursion (values copied).

    Every copy is made before ``target`` changes, so a failure leaves it as it was.
    """
    copies = {key: thaw(value) for key, value in metadata.items()}
    if target is None:
        return copies
    target.update(copies)
    return target


def _ops_with(wire: str) -> frozenset[type]:
    """The patch operation classes with a member ``wire`` (read from the schema)."""
    return frozenset(cls for cls in get_args(g.JsonPatchOperation) if has_member(cls, wire))


_VALUE_OPS: Final = _ops_with("value")  # add, replace, test
_FROM_OPS: Final = _ops_with("from")  # move, copy
_PATH_OPS: Final = frozenset(get_args(g.JsonPatchOperation)) - _VALUE_OPS - _FROM_OPS  # remove
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def own_ops(patch: Any) -> list[dict[str, Any]] | None:
    """A patch as wire dicts whose values are copies (``None`` when it is not a list).

    Only the members applying needs are kept (extras are open material).

    Raises:
        PatchError: the patch has more operations than the default
            ``PatchLimits.max_operations`` (refused before anything is copied).
    """
    if type(patch) is not list and not isinstance(patch, (list, tuple)):
        return None
    check_operation_count(len(patch))
    ops: list[dict[str, Any]] = []
    for op in patch:
        cls = type(op)
        if cls in _VALUE_OPS:
            value = op.value
            ops.append(
                {
                    "op": op.op,
                    "path": op.path,
                    "value": value if type(value) in _SCALARS else thaw(value),
                }
            )
        elif cls in _PATH_OPS:
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


DEFAULT_MAX_STATE_NODES: Final = 250_000
"""Most JSON values (containers and scalars) STATE_DELTA patches may grow the state to.

About 25 MiB of Python objects (~100 bytes a value), some 4 MB of typical JSON;
the benchmarks' 1 MB state holds 56,000 values.
"""

DEFAULT_MAX_ACTIVITY_NODES: Final = 250_000
"""Most JSON values ACTIVITY_DELTA patches may grow one activity's content to."""
