"""The AG-UI event kinds: what the generated ``Event`` union holds, and how the runtime groups it.

Theory of operation. The generated module is the only source of the event types:
:data:`EVENT_CLASSES` maps each ``type`` tag to its class, read from the ``type``
field's ``const`` of every member of the ``Event`` union, and every dispatch table of
the runtime (the chunk expander's, the verifier's, the reducer's) is built from it by
:func:`dispatch_table`. A class the runtime has no rule for gets the table's
``fallback``, which takes the tolerated path (a diagnostic), never an exception: a
regeneration that adds an event type degrades gracefully.

What the schema cannot say (which events close chunk lanes, which carry attribution
rather than identify an invocation, which belong to one streamed item) is a protocol
rule, kept here once as named sets of type names. :func:`kinds` checks at import that
every name in them is a generated event type, so a renamed or removed type fails
loudly instead of leaving a rule that never fires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypeVar, get_args

import attrs

from agentproto._core.errors import AgentProtoError, UsageError
from agentproto.agui._generated import ENUM_VALUES, Event, Message, TextMessageRole

__all__ = [
    "ACTIVITY",
    "ASSISTANT",
    "ATTRIBUTED",
    "CHUNK_TYPES",
    "CLOSES_EVERY_LANE",
    "CLOSES_NO_LANE",
    "CLOSES_OWN_LANE",
    "ENCRYPTABLE_ROLES",
    "EVENT_CLASSES",
    "EVENT_TYPES",
    "FAMILIES",
    "MESSAGE_CLASSES",
    "MESSAGE_ROLES",
    "REASONING",
    "REASONING_ROLES",
    "RESYNC",
    "RUN_LIFECYCLE",
    "SUBAGENT_LIFECYCLE",
    "SUBAGENT_TERMINALS",
    "TEXT_ROLES",
    "TOOL",
    "TOOL_CALL_SUBTYPE",
    "Family",
    "attribute",
    "check_members",
    "dispatch_table",
    "event_type",
    "has_member",
    "kinds",
    "unlisted",
]

R = TypeVar("R")


def event_type(cls: type) -> str | None:
    """The ``type`` tag of an event class (its field's ``const``); ``None`` for other classes."""
    if not isinstance(cls, type) or not attrs.has(cls):
        return None
    for field in attrs.fields(cls):
        if field.metadata.get("wire") == "type" and isinstance(field.metadata.get("const"), str):
            tag: str = field.metadata["const"]
            return tag
    return None


def has_member(cls: type, wire: str) -> bool:
    """Whether the generated class ``cls`` has a field whose wire name is ``wire``."""
    return any(f.metadata.get("wire") == wire for f in attrs.fields(cls))


def _by_tag(union: Any, tag_wire: str) -> dict[str, type]:
    table: dict[str, type] = {}
    for cls in get_args(union):
        for field in attrs.fields(cls):
            if field.metadata.get("wire") == tag_wire and "const" in field.metadata:
                table[field.metadata["const"]] = cls
    return table


EVENT_CLASSES: Final[Mapping[str, type]] = _by_tag(Event, "type")
"""Every generated event class by its ``type`` tag, in the union's order."""
EVENT_TYPES: Final = frozenset(EVENT_CLASSES)


def kinds(*names: str) -> frozenset[str]:
    """A named set of event types; fails at import when one is not a generated type.

    Raises:
        AgentProtoError: a name is not the tag of any class of the generated
            ``Event`` union (the schema renamed or removed it).
    """
    unknown = [name for name in names if name not in EVENT_TYPES]
    if unknown:
        raise AgentProtoError(
            f"agentproto.agui: the event types {unknown} are not in the generated Event "
            f"union; the runtime's rules for them must follow the schema"
        )
    return frozenset(names)


def attribute(cls: type, wire: str) -> str:
    """The Python attribute of ``cls`` whose wire name is ``wire``.

    Raises:
        AgentProtoError: the class has no such field (the schema changed it).
    """
    for field in attrs.fields(cls):
        if field.metadata.get("wire") == wire:
            name: str = field.name
            return name
    raise AgentProtoError(f"agentproto.agui: {cls.__name__} has no field {wire!r}")


def dispatch_table(
    rules: Mapping[str, R],
    fallback: R,
    *,
    union: Any = Event,
) -> dict[type, R]:
    """Each class of ``union`` mapped to the rule for its ``type`` (``fallback`` without one).

    Args:
        rules: event type -> rule; every name must be a type of ``union``.
        fallback: the rule of a class no entry of ``rules`` names (the tolerated path).
        union: the event classes to cover (the generated ``Event`` union).

    Raises:
        AgentProtoError: ``rules`` names a type that ``union`` does not hold.
    """
    classes = _by_tag(union, "type")
    unknown = sorted(set(rules) - set(classes))
    if unknown:
        raise AgentProtoError(
            f"agentproto.agui: rules for {unknown}, which are not generated event types"
        )
    return {cls: rules.get(tag, fallback) for tag, cls in classes.items()}


def unlisted(event: object, fallback: R, *, code: str, taker: str) -> R:
    """The rule for a class a dispatch table was not built with.

    An event class (one with a ``type`` tag: a newer schema's, say) takes the
    tolerated path, ``fallback``; anything else is a caller error.

    Raises:
        UsageError: ``event`` is not an AG-UI event object (``code``).
    """
    if event_type(event.__class__) is None:
        raise UsageError(code, f"{taker} takes typed AG-UI events, not {type(event).__name__}")
    return fallback


# ---- categories the schema cannot express -------------------------------------------------

CHUNK_TYPES: Final = kinds("TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "REASONING_MESSAGE_CHUNK")
"""The shorthand events chunk expansion turns into START / CONTENT / END."""
RUN_LIFECYCLE: Final = kinds("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR")
SUBAGENT_LIFECYCLE: Final = kinds("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR")
"""Events whose ``subagentRunId`` identifies an invocation rather than attributing the event."""
SUBAGENT_TERMINALS: Final = kinds("SUBAGENT_FINISHED", "SUBAGENT_ERROR")

# How an arriving event affects the open chunk streams (spec: chunk expansion). A type in
# none of these sets (one a regeneration added) closes nothing.
CLOSES_EVERY_LANE: Final = RUN_LIFECYCLE | kinds("MESSAGES_SNAPSHOT")
CLOSES_NO_LANE: Final = kinds(
    "RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"
)
CLOSES_OWN_LANE: Final = kinds(
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "TOOL_CALL_START",
    "TOOL_CALL_ARGS",
    "TOOL_CALL_END",
    "TOOL_CALL_RESULT",
    "STATE_SNAPSHOT",
    "STATE_DELTA",
    "CUSTOM",
    "STEP_STARTED",
    "STEP_FINISHED",
    "REASONING_START",
    "REASONING_END",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
)


ATTRIBUTED: Final = (
    frozenset(tag for tag, cls in EVENT_CLASSES.items() if has_member(cls, "subagentRunId"))
    - SUBAGENT_LIFECYCLE
)
"""The events whose ``subagentRunId`` attributes them to a subagent (read from the schema)."""


@attrs.frozen
class Family:
    """One family of streamed items: its events and the wire name of its id.

    A family is checked as it is built: every type it names must be a generated event
    type that carries ``id_wire`` (a regeneration that renames one fails at import).

    Attributes:
        name: ``text``, ``tool``, ``reasoning`` or ``span``.
        noun: what an item is called in messages.
        id_wire: the wire name of the item's id on every event of the family.
        start: the opener's type; ``content`` and ``end`` the continuations'
            (``content`` is ``None`` for a family without one).
        chunk: the shorthand type that expands into this family, if any.
        repeated: wire names of the opener's fields a continuation chunk may repeat,
            only with the same value.
        defaults: what such a field means when the opener left it out.
        id_attr: the Python attribute of the ``id_wire`` field (read from the schema).
    """

    name: str
    noun: str
    id_wire: str
    start: str
    content: str | None
    end: str
    chunk: str | None = None
    repeated: tuple[str, ...] = attrs.field(default=(), kw_only=True)
    defaults: Mapping[str, str] = attrs.field(factory=dict, kw_only=True)
    id_attr: str = attrs.field(init=False)

    @id_attr.default
    def _id_attr(self) -> str:
        types = (self.start, *self.continuations, self.chunk)
        for tag in kinds(*(t for t in types if t is not None)):
            attribute(EVENT_CLASSES[tag], self.id_wire)
        return attribute(EVENT_CLASSES[self.start], self.id_wire)

    @property
    def continuations(self) -> tuple[str, ...]:
        """The types that continue an open item (CONTENT/ARGS and END)."""
        return tuple(t for t in (self.content, self.end) if t is not None)


_TEXT = ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TEXT_MESSAGE_CHUNK")
_TOOL = ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK")
_REASONING = (
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_CONTENT",
    "REASONING_MESSAGE_END",
    "REASONING_MESSAGE_CHUNK",
)
FAMILIES: Final[Mapping[str, Family]] = {
    family.name: family
    for family in (
        Family(
            "text", "text message", "messageId", *_TEXT,
            repeated=("role", "name"), defaults={"role": "assistant"},
        ),
        Family(
            "tool", "tool call", "toolCallId", *_TOOL,
            repeated=("toolCallName", "parentMessageId"),
        ),
        Family(
            "reasoning", "reasoning message", "messageId", *_REASONING,
            defaults={"role": "reasoning"},
        ),
        Family("span", "reasoning span", "messageId", "REASONING_START", None, "REASONING_END"),
    )
}  # fmt: skip
"""The streamed item families, by name."""


MESSAGE_CLASSES: Final[Mapping[str, type]] = _by_tag(Message, "role")
"""Every generated message class by its ``role`` tag."""
MESSAGE_ROLES: Final = frozenset(MESSAGE_CLASSES)
"""The roles the generated ``Message`` union has a class for."""


def _const(tag: str, wire: str) -> frozenset[str]:
    (cls,) = (EVENT_CLASSES[name] for name in kinds(tag))
    return frozenset(
        f.metadata["const"] for f in attrs.fields(cls) if f.metadata.get("wire") == wire
    )


REASONING_ROLES: Final = _const("REASONING_MESSAGE_START", "role") & MESSAGE_ROLES
"""The roles a ``REASONING_MESSAGE_START`` creates messages with (its ``role`` const)."""
TEXT_ROLES: Final = frozenset(get_args(TextMessageRole)) & MESSAGE_ROLES
"""The roles a ``TEXT_MESSAGE_START`` may create a message with: the schema's
``TextMessageRole`` values that name a message class. A value the schema lists but no
class holds is treated as an unknown enumeration value."""


def _message_roles(*names: str) -> tuple[str, ...]:
    missing = [name for name in names if name not in MESSAGE_ROLES]
    if missing:
        raise AgentProtoError(f"agentproto.agui: no generated message class has role {missing}")
    return names


# The roles the runtime has rules of its own for (checked against the Message union).
ASSISTANT, TOOL, ACTIVITY, REASONING = _message_roles("assistant", "tool", "activity", "reasoning")
if "tool-call" not in ENUM_VALUES["ReasoningEncryptedValueSubtype"]:  # pragma: no cover
    raise AgentProtoError("agentproto.agui: the encrypted-value subtype 'tool-call' is gone")
TOOL_CALL_SUBTYPE: Final = "tool-call"
"""The ``REASONING_ENCRYPTED_VALUE`` subtype naming a tool call (any other names a message)."""
ENCRYPTABLE_ROLES: Final = frozenset(
    role for role, cls in MESSAGE_CLASSES.items() if has_member(cls, "encryptedValue")
)
"""The roles whose messages can hold an encrypted reasoning value (read from the schema)."""


def check_members(cls: type, *wires: str) -> None:
    """Check at import that ``cls`` has a field for each wire name the runtime writes.

    Raises:
        AgentProtoError: one is missing (a regeneration renamed or removed it).
    """
    for wire in wires:
        attribute(cls, wire)


RESYNC: Final = "agentproto.resync"
"""The ``name`` of the ``CUSTOM`` event with which a server that resumes a run from
snapshots (the client's cursor had expired) starts them: what the client had open
mid-run is over; the ``MESSAGES_SNAPSHOT`` and ``STATE_SNAPSHOT`` that follow hold
the run as it stands, at a point where nothing is open (ours, not the protocol's:
see :mod:`agentproto.agui._serve.resume`)."""
