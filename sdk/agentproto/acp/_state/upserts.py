"""The derived upsert rules: their source, written from each entity kind's description.

Theory of operation
-------------------
An upsert rule is straight-line code over the fields of one upsert class (the
speed of a rule written by hand, without restating the fields). It first
computes every value that may be rejected (the id, the ``_meta`` patch, copies
of the collections, a terminal's decoded bytes, the fixed fields), then creates
the entity if needed and assigns, so an update that raises changes nothing.

:func:`upsert_source` writes that code, as text, from the kind's description
(:mod:`agentproto.acp._state.entities`). The code generator writes the text of
every rule the runtime needs into the sealed module
``agentproto.acp._generated_rules_v2`` (``codegen/rules.py``), with the sha256 of
each text; :mod:`agentproto.acp._state.rules` takes the rules from there and
refuses, at import, a sealed module whose texts are not the ones this module
writes now. Only a class no sealed module holds (one a caller made) has its rule
compiled at run time, registered with :mod:`linecache` so that a traceback shows
its lines (:func:`~agentproto._core.wire.source.compile_source`).

The rule code refers to the functions below (:func:`admit`, :func:`bad`,
:func:`as_list`, :func:`decode_output`), to ``UNSET``,
:func:`~agentproto.acp._state.meta.check_meta_patch` and
:func:`~agentproto.acp._state.meta.patch_meta_in_place` (the ``_meta`` rule, checked
before anything changes, applied in place last), ``Any`` and the kind's state record
class, by those names (:func:`rule_names`).
"""

from __future__ import annotations

import binascii
import hashlib
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from agentproto._core.describe import describe
from agentproto._core.errors import LimitError, SchemaError, UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import _generated_v2 as v2
from agentproto.acp._state.entities import LIST_DEFAULT, EntityKind, PatchField, field_types
from agentproto.acp._state.meta import check_meta_patch, patch_meta_in_place

if TYPE_CHECKING:
    from agentproto.acp._state.session import SessionState

__all__ = [
    "Rule",
    "UpsertSource",
    "admit",
    "as_list",
    "b64decode",
    "bad",
    "decode_output",
    "rule_names",
    "upsert_classes",
    "upsert_source",
]

Rule = Callable[["SessionState", Any], Any]
"""A rule: folds one typed update into a session state."""


# ---- what the rule code calls ----------------------------------------------------------------


def admit(state: SessionState, key: str | None) -> None:
    """Make room for one more kept item: an entity under ``key``, or (``None``) an entry of
    a list the session keeps whole (notices, unknown updates).

    Raises:
        LimitError: the session already keeps ``max_entities`` items; nothing changed.
    """
    room = state.max_entities
    if (
        room is not None
        and len(state.entity_order) + len(state.notices) + len(state.unknown) >= room
    ):
        what = f"entity {describe(key)}" if key is not None else "update"
        raise LimitError(
            f"session {describe(state.session_id)} keeps {room} entities; {what} not kept",
            limit="max_entities",
            value=room,
        )
    if key is not None:
        state.entity_order[key] = None


def bad(location: str, expected: str, value: object) -> UsageError:
    """The error of a hand-built update holding a value of the wrong Python type."""
    return UsageError(
        "acp.bad-update", f"{location}: expected {expected}, not {type(value).__name__}"
    )


def as_list(value: object, location: str) -> list[Any]:
    """A fresh list of the items of a collection patch value."""
    if not isinstance(value, list):
        raise bad(location, "a list", value)
    return list(value)


def b64decode(data: object, location: str) -> bytes:
    """Decode one base64 string on its own (RFC 4648, padding required)."""
    if not isinstance(data, str):
        raise SchemaError("type", location, f"expected a base64 string, got {type(data).__name__}")
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except (binascii.Error, ValueError) as err:
        raise SchemaError("contentEncoding", location, f"invalid base64: {err}") from None


def decode_output(output: object, location: str) -> bytearray:
    """The bytes of a terminal's ``output`` snapshot."""
    if not isinstance(output, v2.TerminalOutput):
        raise bad(location, "a TerminalOutput", output)
    return bytearray(b64decode(output.data, location + "/data"))


_SHARED: dict[str, Any] = {
    "Any": Any,
    "UNSET": UNSET,
    "check_meta_patch": check_meta_patch,
    "patch_meta_in_place": patch_meta_in_place,
    "admit": admit,
    "as_list": as_list,
    "bad": bad,
    "decode_output": decode_output,
}


def rule_names(kind: EntityKind) -> dict[str, Any]:
    """The names the rule code of ``kind`` refers to, by name: the shared ones and the
    state record class."""
    return {**_SHARED, kind.state.__name__: kind.state}


# ---- the source ----------------------------------------------------------------------------


@attrs.frozen
class UpsertSource:
    """The source of the upsert rule of one class.

    Attributes:
        cls: the upsert class.
        function: the name the text defines (``_apply_<class name>``).
        text: the Python source: one function definition.
        names: what the text refers to, by name (:func:`rule_names`, and a reset
            value that is no literal, if any).
    """

    cls: type
    function: str
    text: str
    names: dict[str, Any]

    @property
    def sha256(self) -> str:
        """The sha256 of :attr:`text` (what a sealed module records of it)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def upsert_classes(
    kinds: dict[str, EntityKind], namespace: types.ModuleType
) -> dict[type, EntityKind]:
    """Every class of ``namespace`` (a generated classes module) an upsert rule is written
    for, with its kind: the upsert class of each kind, and ``ToolCallUpdate`` (a permission
    request's ``toolCall``) for the tool call kind."""
    out = {kind.upsert: kind for kind in kinds.values()}
    tool_call, update = kinds.get("tool_call"), getattr(namespace, "ToolCallUpdate", None)
    if tool_call is not None and isinstance(update, type):
        out[update] = tool_call
    return out


def _conversion(kind: EntityKind, field: PatchField) -> str | None:
    """The call that checks and converts a value of ``field`` before anything is stored."""
    if field.is_list:
        return "copy_list"
    if kind.spec.bytes_collection and field.name == kind.collection:
        return "decode_output"
    return None


def _prepare(kind: EntityKind, cls: type, patch: tuple[PatchField, ...]) -> list[str]:
    """The lines that compute (and check) every value that may be rejected."""
    lines = [f"    table = state.entity_tables[{kind.name!r}]"]
    strings = frozenset(name for name, tp in field_types(cls).items() if tp is str)
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
        "        check_meta_patch(meta)",
    ]
    for name, wire in kind.fixed:
        lines.append(f"    f_{name} = u.{name}")
        if name in strings:
            lines += [
                f"    if f_{name}.__class__ is not str:",
                f"        raise bad({'/' + wire!r}, 'a string', f_{name})",
            ]
    for index, field in enumerate(patch):
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


def _reset(value: Any, index: int, names: dict[str, Any]) -> str:
    """The expression of a field's reset value: a literal, else a name added to ``names``."""
    if value is LIST_DEFAULT:
        return "[]"
    if value.__class__ in (str, int, float, bool):
        return repr(value)
    names[f"r{index}"] = value
    return f"r{index}"


def _assign(kind: EntityKind, patch: tuple[PatchField, ...], names: dict[str, Any]) -> list[str]:
    """The lines that store the computed values on the entity."""
    lines = []
    declared = attrs.fields_dict(kind.state)
    for name, _ in kind.fixed:
        target = f"entity.{name}" if name in declared else f"entity.other_fields[{name!r}]"
        lines.append(f"    {target} = f_{name}")
    for index, field in enumerate(patch):
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
            reset = _reset(field.reset, index, names)
            lines.append(f"        entity.{field.name} = {reset} if {value} is None else {value}")
    # the stored metadata is the state's own (what it hands out is copied): patched in place,
    # O(patch), once nothing can reject the update any more
    lines += [
        "    if meta is not UNSET:",
        "        entity.meta = patch_meta_in_place(entity.meta, meta)",
        "    return entity",
    ]
    return lines


def upsert_source(kind: EntityKind, cls: type | None = None) -> UpsertSource:
    """The source of the rule of an upsert class of ``kind`` (its own upsert class by default).

    Every patch field omitted is unchanged, ``None`` resets it to the state
    record's default, a value replaces it (a collection copied); ``_meta`` is a
    metadata patch; fixed fields are always set.
    """
    cls = kind.upsert if cls is None else cls
    patch = kind.patch if cls is kind.upsert else kind.patch_fields(cls)
    names = rule_names(kind)
    state = kind.state.__name__
    create = f"{state}({kind.id_field}=ident" if kind.id_field else f"{state}("
    create += f", kind={kind.name!r})" if kind.spec.tagged else ")"
    key = f"{kind.name + ':'!r} + ident" if kind.id_field else repr(kind.name)
    function = f"_apply_{cls.__name__}"
    lines = [f"def {function}(state: Any, u: Any) -> Any:", *_prepare(kind, cls, patch)]
    lines += [
        "    if entity is None:",
        f"        admit(state, {key})",
        f"        entity = table[ident] = {create}",
        *_assign(kind, patch, names),
    ]
    return UpsertSource(cls=cls, function=function, text="\n".join(lines) + "\n", names=names)
