"""The ACP v2 ``session/update`` rules: one per update kind, most of them derived.

Theory of operation
-------------------
A *rule* takes a :class:`~agentproto.acp.SessionState` and one typed update and
folds the update in. :func:`build_rules` makes the dispatch table from the
generated ``SessionUpdate`` union itself, so a regeneration that adds a member
never makes :meth:`~agentproto.acp.SessionState.apply` raise:

* the upsert and the chunk of every entity kind get a rule derived from its
  description (:mod:`agentproto.acp._state.entities`). An upsert rule is compiled
  once per class, as straight-line code over its fields (the speed of a rule
  written by hand, without restating the fields): it first computes every
  value that may be rejected (the id, the ``_meta`` patch, copies of the
  collections, a terminal's decoded bytes, the fixed fields), then creates the
  entity if needed and assigns. An update that raises changes nothing.
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
:func:`admit`, the one place that counts them, after every check that may
reject the update.
"""

from __future__ import annotations

import binascii
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from agentproto._core.describe import describe
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import LimitError, SchemaError, UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._protocol.wire import CONVERTER
from agentproto.acp._state.entities import (
    BY_CHUNK,
    BY_UPSERT,
    KINDS,
    LIST_DEFAULT,
    EntityKind,
    PatchField,
    PlanState,
)
from agentproto.acp._state.meta import apply_meta_update

if TYPE_CHECKING:
    from agentproto.acp._state.session import SessionState

__all__ = ["LATEST", "Rule", "admit", "build_rules", "tool_call_rule"]

Rule = Callable[["SessionState", Any], Any]
"""A rule: folds one typed update into a session state."""


def admit(state: SessionState, key: str | None) -> None:
    """Make room for one more kept item: an entity under ``key``, or (``None``) an entry of
    a list the session keeps whole (notices, unknown updates).

    Raises:
        LimitError: the session already keeps ``max_entities`` items; nothing changed.
    """
    room = state.max_entities
    if room is not None and len(state._order) + len(state.notices) + len(state.unknown) >= room:
        what = f"entity {describe(key)}" if key is not None else "update"
        raise LimitError(
            f"session {describe(state.session_id)} keeps {room} entities; {what} not kept",
            limit="max_entities",
            value=room,
        )
    if key is not None:
        state._order[key] = None


def _bad(location: str, expected: str, value: object) -> UsageError:
    return UsageError(
        "acp.bad-update", f"{location}: expected {expected}, not {type(value).__name__}"
    )


def _as_list(value: object, location: str) -> list[Any]:
    """A fresh list of the items of a collection patch value."""
    if not isinstance(value, list):
        raise _bad(location, "a list", value)
    return list(value)


def _b64decode(data: object, location: str) -> bytes:
    """Decode one base64 string on its own (RFC 4648, padding required)."""
    if not isinstance(data, str):
        raise SchemaError("type", location, f"expected a base64 string, got {type(data).__name__}")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as err:
        raise SchemaError("contentEncoding", location, f"invalid base64: {err}") from None


def _decode_output(output: object, location: str) -> bytearray:
    """The bytes of a terminal's ``output`` snapshot."""
    if not isinstance(output, v2.TerminalOutput):
        raise _bad(location, "a TerminalOutput", output)
    return bytearray(_b64decode(output.data, location + "/data"))


def _str_fields(cls: type) -> frozenset[str]:
    """The fields of ``cls`` whose type is ``str`` (an alias of it included)."""
    try:
        hints = typing.get_type_hints(cls, vars(v2))
    except NameError:  # a class whose annotations do not resolve: nothing is checked
        return frozenset()
    return frozenset(name for name, tp in hints.items() if tp is str)


# ---- derived rules ---------------------------------------------------------------------------


def _conversion(kind: EntityKind, field: PatchField) -> str | None:
    """The call that checks and converts a value of ``field`` before anything is stored."""
    if field.is_list:
        return "copy_list"
    if kind.spec.bytes_collection and field.name == kind.collection:
        return "decode_output"
    return None


def _prepare(kind: EntityKind, cls: type) -> list[str]:
    """The lines that compute (and check) every value that may be rejected."""
    lines = [f"    table = state._tables[{kind.name!r}]"]
    strings = _str_fields(cls)
    if kind.id_field is None:
        lines.append("    ident = ''")
    else:
        lines += [
            f"    ident = u.{kind.id_field}",
            "    if ident.__class__ is not str:",
            f"        raise bad({'/' + str(kind.id_wire)!r}, 'a string', ident)",
        ]
    lines += [
        "    entity = table.get(ident)",
        "    meta = u.meta",
        "    if meta is not UNSET:",
        "        meta = apply_meta(None if entity is None else entity.meta, meta)",
    ]
    for name, wire in kind.fixed:
        lines.append(f"    f_{name} = u.{name}")
        if name in strings:
            lines += [
                f"    if f_{name}.__class__ is not str:",
                f"        raise bad({'/' + wire!r}, 'a string', f_{name})",
            ]
    for index, field in enumerate(kind.patch_fields(cls)):
        convert = _conversion(kind, field)
        if convert is None:
            continue
        value = f"v{index}"
        lines += [
            f"    {value} = u.{field.name}",
            f"    if {value} is not UNSET and {value} is not None:",
        ]
        if convert == "copy_list":  # inline: the common case is a list, copied
            lines.append(
                f"        {value} = {value}[:] if {value}.__class__ is list "
                f"else as_list({value}, {'/' + field.wire!r})"
            )
        else:
            lines.append(f"        {value} = {convert}({value}, {'/' + field.wire!r})")
    return lines


def _assign(kind: EntityKind, cls: type, env: dict[str, Any]) -> list[str]:
    """The lines that store the computed values on the entity."""
    lines = []
    declared = attrs.fields_dict(kind.state)
    for name, _ in kind.fixed:
        target = f"entity.{name}" if name in declared else f"entity.other_fields[{name!r}]"
        lines.append(f"    {target} = f_{name}")
    for index, field in enumerate(kind.patch_fields(cls)):
        precomputed = _conversion(kind, field) is not None
        value = f"v{index}" if precomputed else "v"
        if not precomputed:
            lines.append(f"    v = u.{field.name}")
        lines.append(f"    if {value} is not UNSET:")
        if not field.typed:
            lines += [
                f"        if {'not ' + value if field.is_list else value + ' is None'}:",
                f"            entity.other_fields.pop({field.name!r}, None)",
                "        else:",
                f"            entity.other_fields[{field.name!r}] = {value}",
            ]
        elif field.reset is None:
            lines.append(f"        entity.{field.name} = {value}")
        else:
            reset = "[]" if field.reset is LIST_DEFAULT else f"r{index}"
            env[f"r{index}"] = field.reset
            lines.append(f"        entity.{field.name} = {reset} if {value} is None else {value}")
    lines += ["    if meta is not UNSET:", "        entity.meta = meta", "    return entity"]
    return lines


def upsert_rule(kind: EntityKind, cls: type | None = None) -> Rule:
    """The rule of an upsert class of ``kind`` (its own upsert class by default).

    Compiled once: every patch field omitted is unchanged, ``None`` resets it to
    the state record's default, a value replaces it (a collection copied);
    ``_meta`` is a metadata patch; fixed fields are always set.
    """
    cls = kind.upsert if cls is None else cls
    env: dict[str, Any] = {
        "UNSET": UNSET,
        "apply_meta": apply_meta_update,
        "as_list": _as_list,
        "decode_output": _decode_output,
        "bad": _bad,
        "admit": admit,
        "State": kind.state,
    }
    create = f"State({kind.id_field}=ident" if kind.id_field else "State("
    create += f", kind={kind.name!r})" if kind.spec.tagged else ")"
    key = f"{kind.name + ':'!r} + ident" if kind.id_field else repr(kind.name)
    lines = ["def rule(state, u):", *_prepare(kind, cls)]
    lines += [
        "    if entity is None:",
        f"        admit(state, {key})",
        f"        entity = table[ident] = {create}",
        *_assign(kind, cls, env),
    ]
    source = "\n".join(lines)
    exec(compile(source, f"<agentproto rule {cls.__qualname__}>", "exec"), env)
    rule: Rule = env["rule"]
    return rule


def chunk_rule(kind: EntityKind) -> Rule:
    """The rule of ``kind``'s chunk: its item appended to the collection, in receive order."""
    assert kind.collection is not None and kind.id_field is not None
    assert kind.item_field is not None
    name, id_field, id_wire = kind.name, kind.id_field, f"/{kind.id_wire}"
    item, collection, new, prefix = kind.item_field, kind.collection, kind.new, kind.name + ":"

    def rule(state: SessionState, u: Any) -> None:
        ident = getattr(u, id_field)
        if ident.__class__ is not str:
            raise _bad(id_wire, "a string", ident)
        table = state._tables[name]
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
        data = _b64decode(getattr(u, item), location)
        ident = getattr(u, id_field)
        if ident.__class__ is not str:
            raise _bad(f"/{kind.id_wire}", "a string", ident)
        table = state._tables[name]
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
        raise _bad("/plan/planId", "a string", ident)
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
        raise _bad("/planId", "a string", u.plan_id)
    if state.plans.pop(u.plan_id, None) is not None:
        del state._order["plan:" + u.plan_id]


def _latest_rule(key: str) -> Rule:
    def latest(state: SessionState, u: Any) -> None:
        setattr(state, key, u)
        state._order[key] = None

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
    state._order["usage"] = None


def _apply_notice(state: SessionState, u: v2.NoticeSessionUpdate) -> None:
    admit(state, None)
    state.notices.append(u)
    state._order["notices"] = None


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
