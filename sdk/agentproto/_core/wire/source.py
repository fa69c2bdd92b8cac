"""Python source of the per-class loaders and dumpers the wire converter compiles.

A class loader is straight-line code: for each field, read the wire member, check
it (the value check comes from the converter, which knows the types), store it in
the new object's slot. Required fields are read first, so that an object holding
nothing else (most nested objects) takes a short way past the optional ones. A
dumper writes each field under its wire name, leaving absent fields out and
keeping an explicit ``null`` where the type allows it.

The functions here build source lines. The code generator writes them into
the sealed ``_generated_loaders`` modules (each function and its per-class names
prefixed, so many live in one module); :mod:`agentproto._core.wire.converter` compiles
them at run time for a class no sealed module holds. Either way the code refers
to the names :func:`loader_env` describes.

No code exists only as a string at run time: :func:`compile_source`, the one place
code is compiled at run time (a loader or dumper of a class a caller brings, an ACP
upsert rule of one), registers the text with :mod:`linecache` under a name of its
own, so that a traceback through it shows its lines; :func:`function_source` prints
the source of any loader, dumper or rule, compiled so or read from a module.
"""

from __future__ import annotations

import inspect
import linecache
from collections.abc import Callable
from typing import Any

import attrs

from agentproto._core.describe import describe
from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET
from agentproto._core.wire.checks import (
    Unrecognised,
    check_constraints,
    escape_pointer,
    load_int,
    load_number,
    strip_none,
    type_error,
    unwrap_annotated,
    wire_error,
)
from agentproto._core.wire.loaders import reject_unknown

__all__ = [
    "class_dumper_lines",
    "class_loader_lines",
    "compile_source",
    "function_source",
    "loader_env",
    "loader_fields",
]

ValueCode = Callable[[Any, dict[str, Any], str, str, dict[str, Any]], list[str]]
"""``(type, field metadata, slot name, path expression, env)`` → lines checking ``v``."""


def loader_env(cls: type, prefix: str) -> dict[str, Any]:
    """The names a class loader refers to: ``{prefix}cls`` (the class, as every
    name the loader of one class alone needs is prefixed) and the shared ones."""
    return {
        f"{prefix}cls": cls,
        "new": object.__new__,
        "UNSET": UNSET,
        "SchemaError": SchemaError,
        "err": wire_error,
        "type_error": type_error,
        "load_int": load_int,
        "load_number": load_number,
        "check": check_constraints,
        "describe": describe,
        "unknown": reject_unknown,
        "Unrecognised": Unrecognised,
    }


def loader_fields(cls: type) -> list[Any]:
    """The fields a class loader reads, in its order: the required ones first (the
    loader's per-field names are numbered in this order)."""
    return sorted(
        (f for f in attrs.fields(cls) if not f.metadata.get("extra")),
        key=lambda f: not f.metadata.get("required"),
    )


def _absent(meta: Any) -> str:
    """The value an absent optional field holds: ``UNSET`` for a patch field."""
    return "UNSET" if meta.get("patch") else "None"


def class_loader_lines(
    cls: type,
    hints: dict[str, Any],
    value_code: ValueCode,
    env: dict[str, Any],
    signature: str,
    prefix: str,
    *,
    countdown: bool = False,
) -> list[str]:
    """The source of the loader of ``cls`` (``def {signature}:``, taking ``d, p, c``).

    Fills ``env`` with the names it needs: the shared ones of :func:`loader_env`,
    and this class's own, which start with ``prefix``.

    With ``countdown`` the loader counts the members not yet accounted for and looks
    an optional field up only while some are left. Compiled, the count is a machine
    integer and the skipped lookups are a gain; interpreted, each test costs about as
    much as it saves (an ACP update, with many optional members present, pays more).
    """
    closed = getattr(cls, "__agentproto_closed__", False)
    lines = [
        f"def {signature}:",
        "    if d.__class__ is not dict:",
        "        raise type_error('object', d, p)",
        f"    o: Any = new({prefix}cls)",
    ]
    ordered = loader_fields(cls)
    n_required = sum(1 for f in ordered if f.metadata.get("required"))
    if countdown:  # the members not yet accounted for
        lines.append(f"    n = len(d) - {n_required}")
        nothing_else, something_else = "not n", "n"
    else:
        lines.append(
            f"    n = {n_required}  # the members read: the required ones, then each other"
        )
        nothing_else, something_else = f"len(d) == {n_required}", "n != len(d)"
    defaults = [f"o.{f.name} = {_absent(f.metadata)}" for f in ordered[n_required:]]
    if not closed:
        defaults.append("o.extra = None")
    known: list[str] = []
    for index, field in enumerate(ordered):
        if index == n_required and defaults:
            lines.append(f"    if {nothing_else}:  # the required members, nothing else")
            lines.extend(f"        {line}" for line in defaults)
            lines.append("        return o")
        known.append(field.metadata["wire"])
        tp = strip_none(unwrap_annotated(hints[field.name]))
        # counting down, an optional field but the first (which follows the return
        # above: members are left) is skipped when none is
        guard = "not n or " if countdown and index > n_required else ""
        counted = "n -= 1" if countdown else "n += 1"
        lines.extend(_field_lines(f"{prefix}F{index}", field, tp, value_code, env, guard, counted))
    env[f"{prefix}KNOWN"] = frozenset(known)
    return [*lines, f"    if {something_else}:", *_unknown_lines(closed, prefix), "    return o"]


def _unknown_lines(closed: bool, prefix: str) -> list[str]:
    """What a class loader does with members it does not know: a closed class refuses
    (or strips) them, another keeps them in ``extra``."""
    if closed:
        return [f"        unknown(d, p, c, {prefix}KNOWN)"]
    return [
        f"        o.extra = {{k: x for k, x in d.items() if k not in {prefix}KNOWN}}",
        "        if c.deep is not None:",  # members kept verbatim, from Python
        "            c.deep(o.extra, p)",
        "    else:",
        "        o.extra = None",
    ]


def _field_lines(
    slot: str,
    field: Any,
    tp: Any,
    value_code: ValueCode,
    env: dict[str, Any],
    guard: str = "",
    counted: str = "n += 1",
) -> list[str]:
    """Read, check and store one field (an optional one: looked up unless ``guard``
    holds, then counted with ``counted``)."""
    meta = field.metadata
    wire = meta["wire"]
    name = field.name
    fpath = f"p + {('/' + escape_pointer(wire))!r}"
    if meta.get("required"):  # counted in advance: the loader raises when it is missing
        message = f"missing required property {wire!r}"
        lines = [
            "    try:",
            f"        v = d[{wire!r}]",
            "    except KeyError:",
            f"        raise err('required', p, {message!r}) from None",
        ]
        pad = "    "
    else:
        lines = [f"    if {guard}{wire!r} not in d:", f"        o.{name} = {_absent(meta)}"]
        lines += ["    else:", f"        v = d[{wire!r}]", f"        {counted}"]
        pad = "        "
    body: list[str] = []
    indent = ""
    if meta.get("nullable") or meta.get("patch"):
        body += ["if v is None:", f"    o.{name} = None", "else:"]
        indent = "    "
    check = value_code(tp, meta, slot, fpath, env)
    body.extend(f"{indent}{line}" for line in _guarded(slot, meta, check, fpath))
    body.append(f"{indent}o.{name} = v")
    lines.extend(f"{pad}{line}" for line in body)
    return lines


def _guarded(slot: str, meta: Any, check: list[str], fpath: str) -> list[str]:
    """``check``, wrapped where a failure is tolerated.

    An unknown union member or enumeration value in an optional field removes the
    field; ACP's ``x-deserialize-default-on-error`` defaults a field whose value the
    schema rejects. Both only when parsing tolerantly, each with a diagnostic.
    """
    default = _absent(meta)
    guarded = meta.get("on_error") == "default" and bool(check)
    strippable = not meta.get("required") and any(f"{slot}(" in ln for ln in check)
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


def _always_written(field: Any) -> bool:
    """Whether a dumper always writes the member (a required one that is no patch field)."""
    return bool(field.metadata.get("required")) and not field.metadata.get("patch")


def class_dumper_lines(
    cls: type, hints: dict[str, Any], is_plain: Callable[[Any], bool], signature: str
) -> list[str]:
    """The source of the dumper of ``cls`` (``def {signature}:``, taking ``o``;
    ``dv`` dumps a nested value)."""
    lines = [f"def {signature}:"]
    written = [f for f in attrs.fields(cls) if not f.metadata.get("extra")]
    other = len(written) < len(attrs.fields(cls))

    def value(field: Any, name: str) -> str:
        tp = strip_none(unwrap_annotated(hints[field.name]))
        return name if is_plain(tp) else f"dv({name})"  # dv(None) is None

    # the leading members always written make one dict display (a required member is
    # written even when None: the check that follows a dump refuses it there)
    lead = next((i for i, f in enumerate(written) if not _always_written(f)), len(written))
    pairs = ", ".join(f"{f.metadata['wire']!r}: {value(f, 'o.' + f.name)}" for f in written[:lead])
    lines.append(f"    d: dict[str, Any] = {{{pairs}}}")
    for field in written[lead:]:
        meta = field.metadata
        wire = meta["wire"]
        lines.append(f"    v = o.{field.name}")
        if meta.get("patch"):
            lines.append("    if v is not UNSET:")
            lines.append(f"        d[{wire!r}] = None if v is None else {value(field, 'v')}")
        elif meta.get("required"):
            lines.append(f"    d[{wire!r}] = {value(field, 'v')}")
        else:
            lines.append("    if v is not None:")
            lines.append(f"        d[{wire!r}] = {value(field, 'v')}")
    if other:
        lines.append("    if o.extra:")
        lines.append("        d.update(o.extra)")
    lines.append("    return d")
    return lines


_COMPILED: dict[str, list[str]] = {}
"""The lines of every text :func:`compile_source` compiled, by file name (what
:mod:`linecache` holds too, unless something cleared it)."""


def compile_source(text: str, what: str, env: dict[str, Any]) -> str:
    """Run ``text`` (function definitions) in ``env``, its lines registered with linecache.

    The file name is ``<agentproto WHAT>`` (``<agentproto loader pkg.Class>``), with a
    number added when another text already took it, so each compiled unit keeps its
    own lines: a traceback through the code shows them, and :func:`function_source`
    prints them.

    Returns:
        The file name the code was compiled under.
    """
    lines = text.splitlines(keepends=True)
    filename = f"<agentproto {what}>"
    number = 1
    while _COMPILED.get(filename, lines) != lines:
        number += 1
        filename = f"<agentproto {what} #{number}>"
    _COMPILED[filename] = lines
    linecache.cache[filename] = (len(text), None, lines, filename)
    exec(compile(text, filename, "exec"), env)
    return filename


def function_source(function: Callable[..., Any]) -> str:
    """The source of a loader, dumper or rule: the definition of the function that runs.

    For a class loader or dumper, or a derived ACP upsert rule, that is its straight-line
    code, read from the sealed module that holds it or from what :func:`compile_source`
    compiled; for a loader made by a factory (a union's, a list's), the factory's inner
    function.

    Raises:
        TypeError: ``function`` is not Python code (a compiled build's native loader:
            read its ``.py`` source, installed beside it).
    """
    code = getattr(function, "__code__", None)
    filename = getattr(code, "co_filename", "")
    if filename in _COMPILED and filename not in linecache.cache:  # cleared since: again
        lines = _COMPILED[filename]
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return inspect.getsource(function)
