"""The ACP v2 ``session/update`` rules: one per update kind, most of them derived.

Theory of operation
-------------------
A *rule* takes a :class:`~agentproto.acp.SessionState` and one typed update and
folds the update in. :func:`build_rules` makes the dispatch table from the
generated ``SessionUpdate`` union itself, so a regeneration that adds a member
never makes :meth:`~agentproto.acp.SessionState.apply` raise:

* the upsert and the chunk of every entity kind get a rule derived from its
  description (:mod:`agentproto.acp._state.entities`). An upsert rule is
  straight-line code over the fields of its class, written by
  :mod:`agentproto.acp._state.upserts`; the code generator writes every one the
  generated classes need into the sealed module ``_generated_rules_v2``, which this
  module takes them from (and refuses at import when its code is not what the
  descriptions give now: regenerate). Only the rule of a class a caller made is
  compiled at run time. An update that raises changes nothing.
* the kinds whose rule is truly their own are written here: terminal output
  chunks (each base64-decoded on its own, bytes appended), plans (replaced
  whole, ``_meta`` kept whole), ``plan_removed``, ``usage_update`` (its
  three-state ``cost``), notices (kept in order) and the latest-value kinds.
* the catch-all member, and any member this module has no rule for, are kept
  in :attr:`~agentproto.acp.SessionState.unknown` (as an ``OtherSessionUpdate``
  holding the raw payload) with an ``unknown-session-update`` diagnostic.

Rules raise only :class:`~agentproto.SchemaError` (invalid base64, a
``_meta`` that is neither an object nor ``null``),
:class:`~agentproto.UsageError` (a hand-built update whose id, collection,
fixed field or terminal output has the wrong Python type) and
:class:`~agentproto.LimitError` (a new entity, notice or unknown update past
the session's ``max_entities``). A rule creates an entity through
:func:`~agentproto.acp._state.upserts.admit`, the one place that counts them, after
every check that may reject the update.
"""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

import attrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET
from agentproto._core.wire.source import compile_source
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER
from agentproto.acp._state import _generated_rules_v2 as sealed
from agentproto.acp._state.entities import BY_CHUNK, BY_UPSERT, KINDS, EntityKind, PlanState
from agentproto.acp._state.upserts import (
    Rule,
    admit,
    b64decode,
    bad,
    upsert_classes,
    upsert_source,
)

if TYPE_CHECKING:
    from agentproto.acp._state.session import SessionState

__all__ = [
    "LATEST",
    "TOLERATED",
    "Rule",
    "build_rules",
    "chunk_rule",
    "sealed_rules",
    "tool_call_rule",
    "upsert_rule",
]


# ---- derived rules ---------------------------------------------------------------------------


_UPSERTS = upsert_classes(KINDS, v2)
"""Every generated class with an upsert rule, and its kind."""


def sealed_rules() -> dict[type, Rule]:
    """The rules of the sealed module, each checked against the code the descriptions give.

    A class the module lacks has its rule compiled when asked (``python -m codegen
    --check`` reports the module out of date).

    Raises:
        ImportError: the sealed module holds other code than the descriptions give
            now (an entity description, a state record or the rule writer changed
            since it was generated); regenerate it.
    """
    stale = sorted(
        cls.__name__
        for cls, sha256 in sealed.SOURCE_SHA256.items()
        if cls not in _UPSERTS or sha256 != upsert_source(_UPSERTS[cls], cls).sha256
    )
    if stale:
        raise ImportError(
            f"{sealed.__name__} holds other upsert rules than the entity descriptions give "
            f"now ({', '.join(stale)}); regenerate it with `python -m codegen`"
        )
    return dict(sealed.RULES)


_SEALED = sealed_rules()


def upsert_rule(kind: EntityKind, cls: type | None = None) -> Rule:
    """The rule of an upsert class of ``kind`` (its own upsert class by default).

    Every patch field omitted is unchanged, ``None`` resets it to the state
    record's default, a value replaces it (a collection copied); ``_meta`` is a
    metadata patch; fixed fields are always set. The rule of a generated class,
    for the runtime's own description of its kind, is the sealed module's; any
    other is compiled now, from the same code
    (:func:`~agentproto.acp._state.upserts.upsert_source`).
    """
    cls = kind.upsert if cls is None else cls
    rule = _SEALED.get(cls)
    if rule is not None and _UPSERTS.get(cls) is kind:
        return rule
    source = upsert_source(kind, cls)
    env = dict(source.names)
    compile_source(source.text, f"rule {cls.__module__}.{cls.__qualname__}", env)
    compiled: Rule = env[source.function]
    return compiled


def chunk_rule(kind: EntityKind) -> Rule:
    """The rule of ``kind``'s chunk: its item appended to the collection, in receive order."""
    assert kind.collection is not None and kind.id_field is not None
    assert kind.item_field is not None
    name, id_field, id_wire = kind.name, kind.id_field, f"/{kind.id_wire}"
    item, collection, new, prefix = kind.item_field, kind.collection, kind.new, kind.name + ":"

    def rule(state: SessionState, u: Any) -> None:
        ident = getattr(u, id_field)
        if ident.__class__ is not str:
            raise bad(id_wire, "a string", ident)
        table = state.entity_tables[name]
        entity = table.get(ident)
        if entity is None:
            admit(state, prefix + ident)
            entity = table[ident] = new(ident)
        getattr(entity, collection).append(getattr(u, item))

    return rule


# ---- the kinds with a rule of their own ------------------------------------------------------


def _bytes_chunk_rule(kind: EntityKind) -> Rule:
    """A terminal output chunk: its data decoded on its own, the bytes appended."""
    assert kind.chunk is not None and kind.collection is not None and kind.item_field is not None
    assert kind.id_field is not None
    name, id_field, collection, new = kind.name, kind.id_field, kind.collection, kind.new
    item = kind.item_field
    location = "/" + attrs.fields_dict(kind.chunk)[item].metadata["wire"]

    def rule(state: SessionState, u: Any) -> None:
        data = b64decode(getattr(u, item), location)
        ident = getattr(u, id_field)
        if ident.__class__ is not str:
            raise bad(f"/{kind.id_wire}", "a string", ident)
        table = state.entity_tables[name]
        entity = table.get(ident)
        if entity is None:
            admit(state, kind.key(ident))
            entity = table[ident] = new(ident)
        current = getattr(entity, collection)
        if current is None:
            setattr(entity, collection, bytearray(data))
        else:
            current += data

    return rule


def _apply_plan(state: SessionState, u: v2.PlanUpdateSessionUpdate) -> None:
    plan = u.plan
    ident = getattr(plan, "plan_id", None)
    if ident.__class__ is not str:
        raise bad("/plan/planId", "a string", ident)
    assert isinstance(ident, str)
    meta = u.meta
    if meta is not None and not isinstance(meta, dict):
        raise SchemaError("type", "/_meta", f"_meta must be an object or null, not {meta!r}")
    existing = state.plans.get(ident)
    if existing is None:
        admit(state, "plan:" + ident)
        state.plans[ident] = PlanState(plan_id=ident, plan=plan, meta=meta or None)
    else:
        existing.plan = plan
        existing.meta = meta or None


def _apply_plan_removed(state: SessionState, u: v2.PlanRemovedSessionUpdate) -> None:
    if u.plan_id.__class__ is not str:
        raise bad("/planId", "a string", u.plan_id)
    if state.plans.pop(u.plan_id, None) is not None:
        del state.entity_order["plan:" + u.plan_id]


def _latest_rule(key: str) -> Rule:
    def latest(state: SessionState, u: Any) -> None:
        setattr(state, key, u)
        state.entity_order[key] = None

    return latest


def _apply_usage(state: SessionState, u: v2.UsageUpdateSessionUpdate) -> None:
    """The latest usage, except ``cost``: a three-state field (omitted keeps the last
    reported cost, ``null`` clears it, a value replaces it)."""
    cost = u.cost
    if cost is UNSET:
        cost = UNSET if state.usage is None else state.usage.cost
    elif cost is None:
        cost = UNSET  # cleared: stored as absent
    state.usage = u if cost is u.cost else attrs.evolve(u, cost=cost)
    state.entity_order["usage"] = None


def _apply_notice(state: SessionState, u: v2.NoticeSessionUpdate) -> None:
    admit(state, None)
    state.notices.append(u)
    state.entity_order["notices"] = None


def _apply_other(state: SessionState, u: v2.OtherSessionUpdate) -> None:
    admit(state, None)
    state.unknown.append(u)
    state.diagnostics.append(
        Diagnostic(
            code="unknown-session-update",
            message=f"unknown sessionUpdate {u.session_update!r} kept but not applied",
            path="/sessionUpdate",
            subject=u.session_update,
        )
    )


def _apply_unhandled(state: SessionState, u: Any) -> None:
    """A member of the union this module has no rule for: kept whole, like an unknown kind."""
    wire: dict[str, Any] = CONVERTER.dump(u)
    tag = wire.pop("sessionUpdate")
    _apply_other(state, v2.OtherSessionUpdate(session_update=tag, extra=wire or None))


LATEST: dict[str, str] = {
    "available_commands_update": "available_commands",
    "config_option_update": "config_options",
    "usage_update": "usage",
    "state_update": "state",
}
"""The kinds whose state is their latest update: tag -> the SessionState attribute
(``usage_update`` keeps its three-state ``cost``: its own rule, below)."""

_OWN: dict[str, Rule] = {
    **{tag: _latest_rule(key) for tag, key in LATEST.items()},
    "usage_update": _apply_usage,
    "plan_update": _apply_plan,
    "plan_removed": _apply_plan_removed,
    "notice": _apply_notice,
}

TOLERATED: frozenset[Rule] = frozenset({_apply_other, _apply_unhandled})
"""The rules of updates that are kept unapplied, with a diagnostic."""


def build_rules(union: Any) -> dict[type, Rule]:
    """The rule of every member class of a generated ``SessionUpdate`` union.

    Entity upserts and chunks get their derived rule, the kinds with a rule of
    their own theirs; the catch-all member and every member without a rule are
    kept unapplied with an ``unknown-session-update`` diagnostic.
    """
    rules: dict[type, Rule] = {}
    for cls in typing.get_args(union):
        if getattr(cls, "__agentproto_other__", False):
            rules[cls] = _apply_other
            continue
        tag = attrs.fields_dict(cls)["session_update"].metadata["const"]
        kind = BY_UPSERT.get(cls)
        if kind is not None:
            rules[cls] = upsert_rule(kind)
        elif (kind := BY_CHUNK.get(cls)) is not None:
            rules[cls] = _bytes_chunk_rule(kind) if kind.spec.bytes_collection else chunk_rule(kind)
        else:
            rules[cls] = _OWN.get(tag, _apply_unhandled)
    return rules


tool_call_rule: Rule = upsert_rule(KINDS["tool_call"], v2.ToolCallUpdate)
"""The rule of a permission request's ``toolCall`` (a ``ToolCallUpdate``, not a notification)."""
