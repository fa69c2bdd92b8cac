"""Adapters between ACP v1 and ACP v2 ``session/update`` notifications.

Theory of operation
-------------------
Most update kinds have the same wire shape in both versions, so an adapter
dumps the update to JSON with one version's converter, adjusts what differs
and loads it with the other's, tolerantly: anything the target cannot hold
(an unknown content type, an enumeration value the target lacks) is dropped
and reported in :attr:`~V1ToV2Adapter.diagnostics`. An update with no
counterpart is dropped with a ``not-convertible`` diagnostic. What differs is
the tool call, the plan, the top-level ``_meta``, and a few kinds of list item
(diffs, terminals, slash commands: :mod:`agentproto.acp._relay.content`,
applied to every list an update carries):

**v1 → v2** (:class:`V1ToV2Adapter`). A v1 ``tool_call`` (a complete report)
and a v1 ``tool_call_update`` both become a v2 ``tool_call_update``. Where v1
has no rule for keeping ``_meta`` (``tool_call_update``,
``session_info_update``) the object is forwarded as is: its keys now merge with
earlier ones and a ``null`` key becomes a removal, the closest v2 equivalent.
Where v1 replaces ``_meta`` whole (``tool_call``, ``compaction_update``,
``subagent_update``, ``session_message``), the v2 client would keep keys the
v1 sender dropped, so:

* stateful (default): the adapter tracks the metadata the v2 client holds per
  entity and adds ``null`` for every key that disappeared;
* stateless: it sends ``_meta: null`` in an update of its own before the
  update with the new object (not atomic: the client briefly holds none).

Which v1 updates replace ``_meta`` whole is a property of the v1 *sender*: one
that sends complete objects in ``tool_call_update`` too (as the stateful
:class:`~agentproto.acp.V2ToV1Adapter` does) is declared with ``whole_meta``.

A v1 ``tool_call`` replaces the whole call: the stateful adapter sends ``null``
for the fields it omits once the call is known, the stateless one always does
(on a new call a ``null`` is the default anyway). v1 message chunks may lack a
``messageId``, which v2 requires: the stateful adapter gives each run of
consecutive chunks of one type a new id (``v1-1``, ``v1-2``, ...), the stateless
one uses one id per type (``v1-agent_message``, ...). A v1 ``plan`` becomes an
items ``plan_update`` of the plan :data:`DEFAULT_PLAN_ID`, ``main`` (the stable
synthetic id of the v2 plan-variants RFD); ``current_mode_update`` has no v2
counterpart.

**v2 → v1** (:class:`~agentproto.acp._relay.to_v1.V2ToV1Adapter`, in
:mod:`agentproto.acp._relay.to_v1`). The items plan ``main`` goes back to a v1
``plan`` (its removal to a ``plan`` without entries); other plans stay
``plan_update`` / ``plan_removed``. A v1 receiver may replace the whole stored
``_meta`` and may store ``null`` values literally, so:

* stateful (default): the adapter keeps each session's v2 state (a
  :class:`~agentproto.acp.SessionState`) and sends the complete merged
  metadata (``{}`` once cleared) whenever an update touches it. A tool call's
  first update becomes a v1 ``tool_call`` (title ``""`` when none is known
  yet), later ones a v1 ``tool_call_update`` carrying the changed fields
  (a cleared collection as ``[]``, a reset kind or status as ``other`` /
  ``pending``); a ``tool_call_content_chunk`` becomes a ``tool_call_update``
  carrying the whole content. A message upsert whose content extends what
  was sent becomes chunks of the new blocks; v1 has no message entity, so
  its ``_meta`` (and any other field but the content) cannot be sent, and
  an upsert that carries one is reported (``lossy-conversion``), also when
  nothing else is sent. A terminal shown in a tool call's content is sent
  as text, and every ``terminal_update`` / ``terminal_output_chunk`` resends
  the content of the tool calls that show it.
* stateless: **lossy for ``_meta``.** The patch object is forwarded as is: a
  v1 receiver that replaces ``_meta`` whole loses the keys the patch omits,
  and stores its ``null`` removals as ``null`` values. Tool call updates
  stay ``tool_call_update`` (a v1 client that needs a ``tool_call`` first
  must use the stateful mode); content chunks and message upserts cannot be
  converted.

Both modes are lossy where v1 lacks the concept: v1 has no status ``paused``
(sent as ``in_progress``) or ``cancelled`` (sent as ``failed``), no unknown
kinds or statuses (sent as ``other`` / ``in_progress``), no tool call
``capabilities``, no agent-owned terminals (shown as text, above), no
``state_update``; and the generated v1 classes cannot carry an explicit
``null``, so clearing a title, name, raw input or output, or a v1 patch field,
is not forwarded.

**Kinds a v1 peer does not know.** The v1 ``SessionUpdate`` union is closed
(v2 has an ``other`` member; v1 has none), and a v1 peer rejects a kind it
does not know: the official Python SDK (agent-client-protocol 0.12.1) fails
the notification's validation and drops it, logging an error. So nothing is
forwarded on the chance that the peer tolerates it: v2 kinds v1 lacks and
unknown kinds are never sent (``not-convertible``), and ``peer_kinds`` names
the v1 kinds the peer accepts (default: every kind of the v1 schema,
:data:`V1_KINDS`); a converted update of another kind is withheld with a
``withheld`` diagnostic each. Name fewer for a peer built on an older v1
schema (0.12.1 lacks ``compaction_update``, ``notice``, ``subagent_update``,
``session_message``) or one that has not advertised the client capability
the v1 schema requires for a kind.

Tool call and message ids are scoped to a session: the adapters keep their
state per ``session_id`` (the ``session_id`` argument of
:meth:`~V1ToV2Adapter.convert`, or the notification's).
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError, UsageError
from agentproto._core.unset import UNSET
from agentproto._core.wire.checks import holds_list
from agentproto._core.wire.converter import WireConverter
from agentproto.acp import _generated_v1 as v1
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER as _v2_converter
from agentproto.acp._relay.combine import entity_of
from agentproto.acp._relay.content import Report, items_to_v2
from agentproto.acp._relay.content import v1_converter as _v1_converter
from agentproto.acp._state.entities import (
    BY_UPSERT,
    KINDS,
    EntityKind,
    field_types,
    union_members,
)
from agentproto.acp._state.meta import Meta, apply_meta_update

__all__ = ["DEFAULT_PLAN_ID", "FROM_V1", "V1_KINDS", "WHOLE_META_V1", "V1ToV2Adapter"]

DEFAULT_PLAN_ID = "main"
"""The v2 ``planId`` of the single plan of a v1 session (the v2 plan-variants RFD's id)."""

_N = TypeVar("_N")

# what the two versions have in common, read from the generated classes
V1_MEMBERS = union_members(v1.SessionUpdate)
_V2_MEMBERS = union_members(v2.SessionUpdate)
V1_KINDS = frozenset(V1_MEMBERS)
"""Every ``sessionUpdate`` kind of the v1 schema agentproto is generated from."""
V1_PLAN = attrs.fields_dict(v1.PlanSessionUpdate)["session_update"].metadata["const"]
TOOL_CALL = KINDS["tool_call"]
FROM_V1 = frozenset(tag for tag in V1_KINDS if tag in _V2_MEMBERS) | {"tool_call", V1_PLAN}
"""The v1 kinds :class:`V1ToV2Adapter` converts: those v2 has under the same tag, a v1
``tool_call`` (a v2 ``tool_call_update``) and a v1 ``plan`` (a v2 ``plan_update``). Any
other v1 kind has no v2 counterpart and is dropped (``not-convertible``)."""


def _optional_wires(cls: type) -> frozenset[str]:
    """The wire names of the optional fields of a v1 class (``_meta`` apart)."""
    return frozenset(
        f.metadata["wire"]
        for f in attrs.fields(cls)
        if "wire" in f.metadata and not f.metadata.get("required") and f.name != "meta"
    )


def _id_optional_in_v1(kind: EntityKind) -> bool:
    """Whether the v1 chunk of ``kind`` may omit the id v2 requires."""
    chunk = V1_MEMBERS.get(kind.spec.chunk or "")
    if chunk is None or kind.id_field is None:
        return False
    field = attrs.fields_dict(chunk).get(kind.id_field)
    return field is not None and not field.metadata.get("required")


# v2 tool call patch fields a v1 ``tool_call`` can omit (wire names); omitted = reset
_TOOL_CALL_RESET = tuple(
    f.wire for f in TOOL_CALL.patch if f.wire in _optional_wires(V1_MEMBERS["tool_call"])
)
# v1 upserts whose _meta may replace the stored object whole -> their v2 entity kind
_V1_UPSERT_KINDS: dict[str, EntityKind] = {
    kind.spec.upsert: kind for kind in KINDS.values() if kind.spec.upsert in V1_MEMBERS
}
WHOLE_META_V1 = frozenset({"compaction_update", "subagent_update", "session_message"}) & set(
    _V1_UPSERT_KINDS
)
"""The v1 updates (besides ``tool_call``) whose ``_meta`` replaces the stored object whole."""
# v1 message chunks that may lack the id v2 requires -> their v2 entity kind
MESSAGE_CHUNK_KINDS = {
    str(kind.spec.chunk): kind.name for kind in KINDS.values() if _id_optional_in_v1(kind)
}


@functools.cache
def _list_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """The (Python name, wire name) of each field of ``cls`` that may hold a list."""
    types = field_types(cls)
    return tuple(
        (f.name, f.metadata["wire"])
        for f in attrs.fields(cls)
        if "wire" in f.metadata and f.name in types and holds_list(types[f.name])
    )


def convert_lists(
    update: Any, wire: dict[str, Any], convert: Callable[[list[Any], list[Any]], list[Any]]
) -> None:
    """Replace each list ``update`` carries, in its wire object, by what ``convert`` makes of it."""
    for name, wire_name in _list_fields(update.__class__):
        value = getattr(update, name)
        if isinstance(value, list) and isinstance(wire.get(wire_name), list):
            wire[wire_name] = convert(value, wire[wire_name])


def notifications_like(cls: type[_N], notification: Any, updates: list[Any]) -> list[_N]:
    """The converted updates, each in a notification like the one they came in."""
    session_id, meta = notification.session_id, notification.meta
    return [cls(session_id=session_id, update=update, meta=meta) for update in updates]  # type: ignore[call-arg]


class Adapter:
    """What both adapters share: diagnostics and tolerant loading."""

    def __init__(self, *, stateful: bool) -> None:
        self.stateful = stateful
        self.diagnostics: list[Diagnostic] = []

    def _report(self, code: str, message: str, subject: str | None = None) -> None:
        self.diagnostics.append(Diagnostic(code=code, message=message, subject=subject))

    def _once(self, reported: set[tuple[Any, str, str]], key: Any) -> Report:
        """A report that tells each loss once per ``key`` (an entity, or an item of one):
        content resent whole does not report the same lost item again."""

        def report(code: str, message: str, subject: str) -> None:
            if (key, code, message) not in reported:
                reported.add((key, code, message))
                self._report(code, message, subject)

        return report

    def _load(self, converter: WireConverter, wire: dict[str, Any], tp: Any) -> Any:
        """Load ``wire`` tolerantly; ``None`` (reported) when it cannot be."""
        repairs: list[Diagnostic] = []
        try:
            value = converter.load(wire, tp, diagnostics=repairs)
        except SchemaError as err:
            kind = wire.get("sessionUpdate")
            self._report("not-convertible", f"{kind!r} dropped: {err}", subject=kind)
            return None
        self.diagnostics.extend(repairs)
        return value


# ---- v1 -> v2 -----------------------------------------------------------------------------


@attrs.define
class _V1Session:
    metas: dict[tuple[str, Any], Meta | None] = attrs.Factory(dict)
    tool_calls: set[str] = attrs.Factory(set)
    run: tuple[str, str] | None = None  # (chunk kind, synthesized id) of the open chunk run
    runs: int = 0
    reported: set[tuple[Any, str, str]] = attrs.Factory(set)  # losses, once per entity


class V1ToV2Adapter(Adapter):
    """Converts ACP v1 session updates to ACP v2 (see the module documentation).

    Args:
        stateful: track what the v2 client holds (default); ``False`` for the
            stateless mode, which clears ``_meta`` with an update of its own
            where v1 replaces it whole.
        whole_meta: the v1 upserts whose ``_meta`` replaces the stored object
            whole (besides ``tool_call``, always). By default those the RFD
            names (:data:`WHOLE_META_V1`); add ``tool_call_update`` and
            ``session_info_update`` when the v1 sender sends complete objects
            there, as :class:`~agentproto.acp.V2ToV1Adapter` does.

    Attributes:
        diagnostics: what was dropped or repaired, in order.

    Example:
        >>> from agentproto.acp import schema_v1
        >>> adapter = V1ToV2Adapter()
        >>> [u.session_update for u in adapter.convert(
        ...     schema_v1.ToolCallSessionUpdate(tool_call_id="c1", title="Read"))]
        ['tool_call_update']
    """

    def __init__(self, *, stateful: bool = True, whole_meta: Iterable[str] = WHOLE_META_V1) -> None:
        super().__init__(stateful=stateful)
        unknown = set(whole_meta) - set(_V1_UPSERT_KINDS)
        if unknown:
            raise UsageError(
                "acp.bad-option",
                f"whole_meta names no v1 upsert: {sorted(unknown)} (choose from "
                f"{sorted(_V1_UPSERT_KINDS)})",
            )
        self.whole_meta = frozenset(whole_meta)
        self._sessions: dict[str, _V1Session] = {}

    def convert(self, update: v1.SessionUpdate, *, session_id: str = "") -> list[v2.SessionUpdate]:
        """The v2 updates to send for one v1 update (none when it has no counterpart).

        Args:
            update: the v1 update.
            session_id: the session it belongs to (ids are scoped to it).

        Raises:
            UsageError: ``update`` is not a v1 session update.
        """
        if not attrs.has(update.__class__) or not hasattr(update, "session_update"):
            raise UsageError(
                "acp.not-an-update", f"expected a v1 session update, not {type(update).__name__}"
            )
        session = self._sessions.setdefault(session_id, _V1Session())
        wire: dict[str, Any] = _v1_converter.dump(update)
        kind = wire["sessionUpdate"]
        ident = wire.get("toolCallId") if kind in ("tool_call", "tool_call_update") else None
        report = self._once(session.reported, kind if ident is None else f"tool_call:{ident}")
        convert_lists(update, wire, lambda items, wires: items_to_v2(items, wires, report))
        if kind in MESSAGE_CHUNK_KINDS:
            if "messageId" not in wire:
                wire["messageId"] = self._message_id(session, kind)
        else:
            session.run = None
        before: list[dict[str, Any]] = []
        if kind == "tool_call":
            wire["sessionUpdate"] = "tool_call_update"
            ident = wire["toolCallId"]
            if not self.stateful or ident in session.tool_calls:
                for name in _TOOL_CALL_RESET:
                    wire.setdefault(name, None)
                wire.setdefault("_meta", None)
            before = self._whole_meta(session, wire, ("tool_call", ident))
            session.tool_calls.add(ident)
        elif kind in self.whole_meta:
            entity = _V1_UPSERT_KINDS[kind]
            ident = None if entity.id_wire is None else wire.get(entity.id_wire)
            before = self._whole_meta(session, wire, (entity.name, ident))
        elif kind == V1_PLAN:
            entries = wire.pop("entries")
            wire["sessionUpdate"] = "plan_update"
            wire["plan"] = {"type": "items", "planId": DEFAULT_PLAN_ID, "entries": entries}
        elif kind not in FROM_V1:  # current_mode_update
            self._report("not-convertible", f"{kind!r} has no v2 counterpart", subject=kind)
            return []
        out: list[v2.SessionUpdate] = []
        for item in [*before, wire]:
            converted = self._load(_v2_converter, item, v2.SessionUpdate)
            if converted is None:
                return []
            out.append(converted)
        for converted in out:
            self._track(session, converted)
        return out

    def convert_notification(
        self, notification: v1.SessionNotification
    ) -> list[v2.UpdateSessionNotification]:
        """Convert a whole v1 ``session/update`` params object (its ``_meta`` kept as is)."""
        updates = self.convert(notification.update, session_id=notification.session_id)
        return notifications_like(v2.UpdateSessionNotification, notification, updates)

    def _message_id(self, session: _V1Session, kind: str) -> str:
        if not self.stateful:
            return f"v1-{MESSAGE_CHUNK_KINDS[kind]}"
        if session.run is None or session.run[0] != kind:
            session.runs += 1
            session.run = (kind, f"v1-{session.runs}")
        return session.run[1]

    def _whole_meta(
        self, session: _V1Session, wire: dict[str, Any], key: Any
    ) -> list[dict[str, Any]]:
        """Rewrite a whole-object ``_meta`` as a v2 patch; the updates to send first."""
        if "_meta" not in wire:
            return []
        new = wire["_meta"]
        if new is None:
            return []
        if not self.stateful:
            # an update of its own that clears: the tag, the id, the fixed fields (a status)
            entity = _V1_UPSERT_KINDS[wire["sessionUpdate"]]
            clear = {"sessionUpdate": wire["sessionUpdate"]}
            if entity.id_wire is not None:
                clear[entity.id_wire] = wire[entity.id_wire]
            for _, fixed in entity.fixed:
                clear[fixed] = wire[fixed]
            clear["_meta"] = None
            return [clear]
        held = session.metas.get(key) or {}
        wire["_meta"] = {k: None for k in held if k not in new} | new
        return []

    def _track(self, session: _V1Session, update: Any) -> None:
        if not self.stateful:
            return
        meta = getattr(update, "meta", UNSET)
        key = entity_of(update)
        if meta is UNSET or key is None or update.__class__ not in META_PATCHED:
            return
        session.metas[key] = apply_meta_update(session.metas.get(key), meta)


META_PATCHED = frozenset(BY_UPSERT)


# ---- what the v2 -> v1 direction reads (V2ToV1Adapter, in .to_v1) ----------------------

# the v2 tool call fields v1 ``tool_call_update`` has (Python names), ``_meta`` last
TOOL_CALL_ALL = (
    *(
        f.name
        for f in TOOL_CALL.patch
        if f.name in attrs.fields_dict(V1_MEMBERS["tool_call_update"])
    ),
    "meta",
)
MESSAGE_UPSERTS = frozenset(
    kind.upsert
    for kind in KINDS.values()
    if kind.spec.upsert not in V1_MEMBERS and kind.spec.chunk in MESSAGE_CHUNK_KINDS
)
# v2 kinds v1 lacks (tool call chunks and message upserts are converted all the same)
NO_V1 = frozenset(cls for tag, cls in _V2_MEMBERS.items() if tag not in V1_MEMBERS)
V2_KINDS = frozenset(typing.get_args(v2.SessionUpdate))
