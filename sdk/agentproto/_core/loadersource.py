"""Python source of the per-class loaders and dumpers the wire converter compiles.

A class loader is straight-line code: for each field, read the wire member, check
it (the value check comes from the converter, which knows the types), store it in
the new object's slot. Required fields are read first, so that an object holding
nothing else (most nested objects) takes a short way past the optional ones. A
dumper writes each field under its wire name, leaving absent fields out and
keeping an explicit ``null`` where the type allows it.

The functions here only build source lines; :mod:`agentproto._core.converter`
compiles them with the environment :func:`loader_env` describes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from agentproto._core.describe import describe
from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET
from agentproto._core.wirechecks import (
    _MISSING,
    Unrecognised,
    _check_constraints,
    _error,
    _load_int,
    _load_number,
    _strip_none,
    _type_error,
    _unwrap_annotated,
    escape_pointer,
)

__all__ = ["class_dumper_lines", "class_loader_lines", "loader_env"]

ValueCode = Callable[[Any, dict[str, Any], str, str, dict[str, Any]], list[str]]
"""``(type, field metadata, slot name, path expression, env)`` → lines checking ``v``."""


def loader_env(cls: type, unknown: Callable[..., None]) -> dict[str, Any]:
    """The names a compiled class loader refers to."""
    return {
        "cls": cls,
        "new": object.__new__,
        "MISSING": _MISSING,
        "UNSET": UNSET,
        "SchemaError": SchemaError,
        "err": _error,
        "type_error": _type_error,
        "load_int": _load_int,
        "load_number": _load_number,
        "check": _check_constraints,
        "describe": describe,
        "unknown": unknown,
        "Unrecognised": Unrecognised,
    }


def _absent(meta: Any) -> str:
    """The value an absent optional field holds: ``UNSET`` for a patch field."""
    return "UNSET" if meta.get("patch") else "None"


def class_loader_lines(
    cls: type, hints: dict[str, Any], value_code: ValueCode, env: dict[str, Any]
) -> list[str]:
    """The source of ``load(d, p, c)`` for ``cls``; fills ``env`` with what it needs."""
    closed = getattr(cls, "__agentproto_closed__", False)
    lines = [
        "def load(d, p, c):",
        "    if d.__class__ is not dict:",
        "        raise type_error('object', d, p)",
        "    o = new(cls)",
        "    n = 0",
    ]
    ordered = sorted(
        (f for f in attrs.fields(cls) if not f.metadata.get("extra")),
        key=lambda f: not f.metadata.get("required"),
    )
    n_required = sum(1 for f in ordered if f.metadata.get("required"))
    defaults = [f"o.{f.name} = {_absent(f.metadata)}" for f in ordered[n_required:]]
    if not closed:
        defaults.append("o.extra = None")
    known: list[str] = []
    for index, field in enumerate(ordered):
        if index == n_required and defaults:
            lines.append(f"    if n == len(d):  # {n_required} required, nothing else")
            lines.extend(f"        {line}" for line in defaults)
            lines.append("        return o")
        known.append(field.metadata["wire"])
        tp = _strip_none(_unwrap_annotated(hints[field.name]))
        lines.extend(_field_lines(index, field, tp, value_code, env))
    env["KNOWN"] = frozenset(known)
    lines.append("    if n != len(d):")
    if closed:
        lines.append("        unknown(d, p, c, KNOWN)")
    else:
        lines.append("        o.extra = {k: x for k, x in d.items() if k not in KNOWN}")
        lines.append("        if c.deep is not None:")  # members kept verbatim, from Python
        lines.append("            c.deep(o.extra, p)")
        lines.append("    else:")
        lines.append("        o.extra = None")
    lines.append("    return o")
    return lines


def _field_lines(
    index: int, field: Any, tp: Any, value_code: ValueCode, env: dict[str, Any]
) -> list[str]:
    """Read, check and store one field."""
    meta = field.metadata
    wire = meta["wire"]
    name = field.name
    fpath = f"p + {('/' + escape_pointer(wire))!r}"
    lines = [f"    v = d.get({wire!r}, MISSING)", "    if v is MISSING:"]
    if meta.get("required"):
        message = f"missing required property {wire!r}"
        lines.append(f"        raise err('required', p, {message!r})")
    else:
        lines.append(f"        o.{name} = {_absent(meta)}")
    lines += ["    else:", "        n += 1"]
    body: list[str] = []
    indent = ""
    if meta.get("nullable") or meta.get("patch"):
        body += ["if v is None:", f"    o.{name} = None", "else:"]
        indent = "    "
    check = value_code(tp, meta, f"F{index}", fpath, env)
    body.extend(f"{indent}{line}" for line in _guarded(index, meta, check, fpath))
    body.append(f"{indent}o.{name} = v")
    lines.extend(f"        {line}" for line in body)
    return lines


def _guarded(index: int, meta: Any, check: list[str], fpath: str) -> list[str]:
    """``check``, wrapped where a failure is tolerated.

    An unknown union member or enumeration value in an optional field removes the
    field; ACP's ``x-deserialize-default-on-error`` defaults a field whose value the
    schema rejects. Both only when parsing tolerantly, each with a diagnostic.
    """
    default = _absent(meta)
    guarded = meta.get("on_error") == "default" and bool(check)
    strippable = not meta.get("required") and any(f"F{index}(" in ln for ln in check)
    if not (guarded or strippable):
        return check
    lines = ["try:", *(f"    {line}" for line in check)]
    if strippable:
        lines += [
            "except Unrecognised as u:",
            "    c.report('unknown-member-stripped', u.path, u.detail)",
            f"    v = {default}",
        ]
    if guarded:
        lines += [
            "except SchemaError as exc:",
            "    if c.diagnostics is None:",
            "        raise",
            f"    c.report('invalid-field-defaulted', {fpath}, str(exc))",
            f"    v = {default}",
        ]
    return lines


def class_dumper_lines(
    cls: type, hints: dict[str, Any], is_plain: Callable[[Any], bool]
) -> list[str]:
    """The source of ``dump(o)`` for ``cls`` (``dv`` dumps a nested value)."""
    lines = ["def dump(o):", "    d = {}"]
    other = False
    for field in attrs.fields(cls):
        meta = field.metadata
        if meta.get("extra"):
            other = True
            continue
        wire = meta["wire"]
        tp = _strip_none(_unwrap_annotated(hints[field.name]))
        value = "v" if is_plain(tp) else "dv(v)"
        lines.append(f"    v = o.{field.name}")
        if meta.get("patch"):
            lines.append("    if v is not UNSET:")
            lines.append(f"        d[{wire!r}] = None if v is None else {value}")
        elif meta.get("required") and meta.get("nullable"):
            lines.append(f"    d[{wire!r}] = None if v is None else {value}")
        elif meta.get("required"):
            lines.append(f"    d[{wire!r}] = {value}")
        else:
            lines.append("    if v is not None:")
            lines.append(f"        d[{wire!r}] = {value}")
    if other:
        lines.append("    if o.extra:")
        lines.append("        d.update(o.extra)")
    lines.append("    return d")
    return lines
