"""ACP v2 entities: one description per entity kind, derived from the generated classes.

Theory of operation
-------------------
An *entity kind* (tool call, terminal, each message type, session info,
compaction, subagent, session message) is written down here exactly once, in
:data:`_SPECS`: its name (the entity key prefix), the ``sessionUpdate`` tag of
its upsert and of its chunk, and its state record class
(:mod:`agentproto.acp._state.entities`). Everything the
schema knows is *derived* from the generated classes when this module is
imported (:class:`EntityKind`): the upsert and chunk classes (by their tag in
the generated ``SessionUpdate`` union), the id field (the required field that
is neither the tag nor a patch field; the one the chunk shares when there are
several), the *fixed* fields (required, not patch: a compaction's ``status``),
the patch fields with their wire names, and what a field resets to when
cleared (the state record attribute's default: a tool call's ``kind`` resets
to ``other``). That one description drives applying
(:mod:`agentproto.acp._state.rules`), :meth:`to_json`, :func:`snapshot` (what
:func:`~agentproto.acp.resync_update` resends), combining and version
conversion.

A field the generated upsert class has but the state record does not declare
(a field the schema added since the record was written) is not lost: it lives
in the record's ``other_fields`` mapping (Python name to value), and is applied,
dumped, combined and resent like any other patch field.

The import-time self-check raises :class:`~agentproto.UsageError` (code
``acp.stale-description``) naming this file when the generated code no
longer has what a description names (an upsert or chunk tag, an id field, a
collection).

The records
-----------
The state records an ACP v2 client keeps: one attrs class per entity kind.

Each record holds an entity's current fields with typed attributes, what a field
resets to when cleared (the attribute's default: a tool call's ``kind`` resets
to ``other``), the stored metadata, and ``other_fields`` for fields the schema
added since the record was written. How updates patch them is described once per
kind below, which also renders them as JSON.
"""

from __future__ import annotations

import base64
import functools
import sys
import typing
from collections.abc import Iterator
from typing import Any, TypeAlias, get_origin

import attrs

from agentproto._core.errors import UsageError
from agentproto._core.wire.checks import value_type
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER
from agentproto.acp._state.meta import Meta

__all__ = [
    "BY_CHUNK",
    "BY_UPSERT",
    "ENTITY_NAMES",
    "KINDS",
    "TOOL_CALL_STATUSES",
    "TOOL_KINDS",
    "CompactionState",
    "Entity",
    "EntityKind",
    "MessageState",
    "PlanState",
    "SessionInfoState",
    "SessionMessageState",
    "SubagentState",
    "TerminalState",
    "ToolCallState",
    "field_types",
    "kind_of",
    "snapshot",
    "union_members",
]

TOOL_KINDS = frozenset(v2.ENUM_VALUES["ToolKind"])
"""The tool kinds ACP v2 defines; any other kind is displayed as ``other``."""

TOOL_CALL_STATUSES = frozenset(v2.ENUM_VALUES["ToolCallStatus"])
"""The tool call statuses ACP v2 defines; any other status counts as in progress."""

_FINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})

_dump = CONVERTER.dump


@attrs.define(kw_only=True)
class _Record:
    """What every upserted entity record below shares besides its own attributes: metadata,
    added fields, wire-named JSON.

    Attributes:
        meta: the stored metadata, ``None`` for none; later updates patch it in place,
            as they change the entity (copy it to keep it as it is).
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


# ---- the descriptions -------------------------------------------------------------------


_HERE = "sdk/agentproto/acp/_state/entities.py"

# ---- the descriptions ------------------------------------------------------------------------


@attrs.frozen
class _Spec:
    """What only a person can say about an entity kind (the rest is derived)."""

    name: str  # the entity key prefix
    upsert: str  # the upsert's sessionUpdate tag
    chunk: str | None  # the chunk's tag
    state: type  # the state record class
    collection: str | None = None  # the state field chunks append to (default: chunk item)
    bytes_collection: bool = False  # the collection is raw bytes, base64 on the wire
    tagged: bool = False  # the state record's ``kind`` holds the entity kind name


_SPECS = (
    _Spec("tool_call", "tool_call_update", "tool_call_content_chunk", ToolCallState),
    _Spec(
        "terminal",
        "terminal_update",
        "terminal_output_chunk",
        TerminalState,
        collection="output",
        bytes_collection=True,
    ),
    *(
        _Spec(name, name, name + "_chunk", MessageState, tagged=True)
        for name in ("user_message", "agent_message", "agent_thought")
    ),
    _Spec("session_info", "session_info_update", None, SessionInfoState),
    _Spec(
        "compaction",
        "compaction_update",
        "compaction_summary_chunk",
        CompactionState,
        collection="summary",
    ),
    _Spec("subagent", "subagent_update", None, SubagentState),
    _Spec("session_message", "session_message", "session_message_chunk", SessionMessageState),
)

_SKIPPED = frozenset({"session_update", "meta", "extra"})
LIST_DEFAULT: Any = object()
"""The reset value of a field whose state default is a fresh empty list."""


def union_members(union: Any) -> dict[str, type]:
    """The members of a generated tagged union by ``sessionUpdate`` tag (catch-all left out)."""
    out: dict[str, type] = {}
    for cls in typing.get_args(union):
        if getattr(cls, "__agentproto_other__", False):
            continue
        out[attrs.fields_dict(cls)["session_update"].metadata["const"]] = cls
    return out


@functools.cache
def field_types(cls: type) -> dict[str, Any]:
    """The resolved annotations of an update class, by Python name (``{}`` when one of
    them names what cannot be found); shared, not to be changed.

    Names are looked up in the class's own module, then in the generated classes
    module (a class made elsewhere, such as a test's, names the generated types).
    """
    home = sys.modules.get(cls.__module__)
    namespace = {**vars(v2), **(vars(home) if home is not None else {})}
    try:
        return typing.get_type_hints(cls, namespace)
    except NameError:
        return {}


def _stale(spec_name: str, what: str) -> UsageError:
    return UsageError(
        "acp.stale-description",
        f"the ACP entity kind {spec_name!r}: {what}; the generated code changed, so edit its "
        f"description in {_HERE}",
    )


@attrs.frozen
class PatchField:
    """One patch field of an upsert class, as applying it needs it.

    Attributes:
        name: the Python name (on the upsert and, when ``typed``, the record).
        wire: the wire name.
        typed: whether the state record declares it (else ``other_fields``).
        reset: the value a clear stores (:data:`LIST_DEFAULT`: a new ``[]``).
        is_list: whether the field is a collection (replaced whole, copied).
    """

    name: str
    wire: str
    typed: bool
    reset: Any
    is_list: bool


class EntityKind:
    """One entity kind: its hand-written description plus what the schema says about it.

    Attributes:
        name: the entity key prefix (``tool_call``).
        spec: the hand-written part.
        upsert: the generated upsert class.
        chunk: the generated chunk class, ``None`` when the kind has none.
        state: the state record class.
        id_field: the Python name of the id (``None``: one entity per session).
        id_wire: its wire name.
        fixed: required non-patch fields besides the id (Python name, wire name).
        identity: the Python names of the id and the fixed fields (what an
            upsert that changes nothing else must still carry).
        patch: the upsert's patch fields (``_meta`` apart).
        collection: the state field chunks append to, ``None`` without chunks.
        item_field: the chunk's field holding the appended item.
    """

    def __init__(self, spec: _Spec, members: dict[str, type]) -> None:
        """Derive the kind from the generated classes.

        Raises:
            UsageError: the generated classes lack what ``spec`` names.
        """
        self.name = spec.name
        self.spec = spec
        self.state = spec.state
        upsert = members.get(spec.upsert)
        if upsert is None:
            raise _stale(spec.name, f"the SessionUpdate union has no {spec.upsert!r} member")
        self.upsert = upsert
        self.chunk = None if spec.chunk is None else members.get(spec.chunk)
        if spec.chunk is not None and self.chunk is None:
            raise _stale(spec.name, f"the SessionUpdate union has no {spec.chunk!r} member")
        meta = attrs.fields_dict(upsert).get("meta")
        if meta is None or not meta.metadata.get("patch"):
            raise _stale(
                spec.name,
                f"{upsert.__name__}._meta is not marked as a patch field (the overlays in "
                "schema/overlays/ mark patch fields; is one missing for this schema?)",
            )
        self.id_field, self.fixed = self._identity(upsert)
        self.id_wire = None if self.id_field is None else self._wire(upsert, self.id_field)
        self.identity = (() if self.id_field is None else (self.id_field,)) + tuple(
            name for name, _ in self.fixed
        )
        self.patch = self.patch_fields(upsert)
        self.collection, self.item_field = self._chunk_fields()

    @staticmethod
    def _wire(cls: type, name: str) -> str:
        wire: str = attrs.fields_dict(cls)[name].metadata["wire"]
        return wire

    def _identity(self, upsert: type) -> tuple[str | None, tuple[tuple[str, str], ...]]:
        """The id field and the fixed fields of the upsert class."""
        required = [
            f.name
            for f in attrs.fields(upsert)
            if f.name not in _SKIPPED and f.metadata.get("required") and not f.metadata.get("patch")
        ]
        ident: str | None = None
        if len(required) == 1:
            ident = required[0]
        elif required:
            shared = [] if self.chunk is None else [n for n in required if n in _names(self.chunk)]
            if len(shared) != 1:
                raise _stale(self.name, f"no single id field among {required}")
            ident = shared[0]
        if ident is not None and ident not in _names(self.state):
            raise _stale(self.name, f"{self.state.__name__} has no id field {ident!r}")
        if self.chunk is not None and (ident is None or ident not in _names(self.chunk)):
            raise _stale(self.name, f"{self.chunk.__name__} lacks the id field {ident!r}")
        fixed = tuple((n, self._wire(upsert, n)) for n in required if n != ident)
        return ident, fixed

    def patch_fields(self, cls: type) -> tuple[PatchField, ...]:
        """The patch fields of ``cls`` (an upsert class of this kind), ``_meta`` apart."""
        declared = attrs.fields_dict(self.state)
        types = field_types(cls)
        out = []
        for f in attrs.fields(cls):
            if f.name in _SKIPPED or not f.metadata.get("patch"):
                continue
            state_field = declared.get(f.name)
            reset: Any = None
            if state_field is not None:
                default = state_field.default
                reset = LIST_DEFAULT if isinstance(default, attrs.Factory) else default  # type: ignore[arg-type]
            is_list = f.name in types and get_origin(value_type(types[f.name])) is list
            typed = state_field is not None
            out.append(PatchField(f.name, f.metadata["wire"], typed, reset, is_list))
        return tuple(out)

    def _chunk_fields(self) -> tuple[str | None, str | None]:
        """The collection chunks append to, and the chunk's item field."""
        if self.chunk is None:
            return None, None
        items = [n for n in _names(self.chunk) if n not in _SKIPPED and n != self.id_field]
        if len(items) != 1:
            raise _stale(self.name, f"{self.chunk.__name__} has no single item field: {items}")
        collection = self.spec.collection or items[0]
        if collection not in _names(self.state) or all(p.name != collection for p in self.patch):
            raise _stale(self.name, f"{collection!r} is not a patch field of the state and upsert")
        return collection, items[0]

    def key(self, ident: str) -> str:
        """The entity key of the entity with this id (``tool_call:c1``, ``session_info``)."""
        return self.name if self.id_field is None else f"{self.name}:{ident}"

    def new(self, ident: str) -> Any:
        """A new state record with its defaults."""
        values: dict[str, Any] = {} if self.id_field is None else {self.id_field: ident}
        if self.spec.tagged:
            values["kind"] = self.name
        return self.state(**values)

    def values(self, entity: Any, fields: dict[str, Any]) -> Iterator[tuple[str, Any]]:
        """Wire names with the values of :func:`snapshot`'s ``fields``, in wire order."""
        if self.id_wire is not None:
            yield self.id_wire, fields[self.id_field]  # type: ignore[index]
        for name, wire in self.fixed:
            yield wire, fields[name]
        for field in self.patch:
            yield field.wire, fields[field.name]
        # a copy: the state patches its metadata in place (one level: values are replaced
        # whole, never changed)
        yield "_meta", dict(entity.meta) if entity.meta else None


def _names(cls: type) -> dict[str, Any]:
    return attrs.fields_dict(cls)


def snapshot(entity: Any) -> dict[str, Any]:
    """Every upsert field of an entity record, by Python name, as an upsert would carry it.

    An empty collection is ``None`` (a clear), except a field whose clear is
    not ``[]`` (a subagent's ``additionalDirectories``); a terminal's bytes are
    a ``TerminalOutput``; ``_meta`` is left out.
    """
    kind = kind_of(entity)
    out: dict[str, Any] = {}
    if kind.id_field is not None:
        out[kind.id_field] = getattr(entity, kind.id_field)
    for name, _ in kind.fixed:
        declared = name in _names(kind.state)
        out[name] = getattr(entity, name) if declared else entity.other_fields.get(name)
    for field in kind.patch:
        value = getattr(entity, field.name) if field.typed else entity.other_fields.get(field.name)
        if field.is_list and value is not None:
            # an empty collection is sent as a clear, unless its clear is not ``[]``
            keeps_empty = field.typed and field.reset is not LIST_DEFAULT
            value = list(value) if value or keeps_empty else None
        out[field.name] = value
    if kind.spec.bytes_collection:
        data = out[kind.collection]  # type: ignore[index]
        if data is not None:
            out[kind.collection] = v2.TerminalOutput(data=base64.b64encode(data).decode("ascii"))  # type: ignore[index]
    return out


_MEMBERS = union_members(v2.SessionUpdate)
ENTITY_NAMES: tuple[str, ...] = tuple(spec.name for spec in _SPECS)
"""Every entity kind this module describes, whether the generated schema has it or not."""


def build_kinds(members: dict[str, type]) -> dict[str, EntityKind]:
    """The entity kinds of a ``SessionUpdate`` union (its members by tag).

    A kind the union has neither tag of (an older or newer ACP) is absent: its
    updates are unknown kinds there. Half a kind is a changed schema, and
    :class:`EntityKind` refuses it.
    """
    return {
        spec.name: EntityKind(spec, members)
        for spec in _SPECS
        if spec.upsert in members or (spec.chunk is not None and spec.chunk in members)
    }


KINDS: dict[str, EntityKind] = build_kinds(_MEMBERS)
"""The entity kinds of the generated schema by name, checked against its classes at import."""

BY_UPSERT: dict[type, EntityKind] = {kind.upsert: kind for kind in KINDS.values()}
"""The entity kind of each generated upsert class."""

BY_CHUNK: dict[type, EntityKind] = {k.chunk: k for k in KINDS.values() if k.chunk is not None}
"""The entity kind of each generated chunk class."""

_BY_STATE: dict[type, EntityKind] = {k.state: k for k in KINDS.values() if not k.spec.tagged}


def kind_of(entity: object) -> EntityKind:
    """The entity kind of a state record.

    Raises:
        UsageError: ``entity`` is not an upserted entity record.
    """
    kind = _BY_STATE.get(entity.__class__)
    if kind is None and isinstance(entity, MessageState):
        kind = KINDS.get(entity.kind)
    if kind is None:
        raise UsageError("acp.unknown-entity", f"not an entity record: {type(entity).__name__}")
    return kind
