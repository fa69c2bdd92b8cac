"""The loaders of annotations that are not classes, and what generated loaders share.

A loader ``load(value, path, ctx)`` checks one decoded JSON value and builds it
(see :mod:`agentproto._core.wire.converter`). Class loaders are straight-line code,
written by :mod:`agentproto._core.wire.source`; the loaders of every other
annotation (lists, unions, literals, scalars) are built by the factories here.
The wire converter calls them at run time, and the sealed ``_generated_loaders``
modules call the same factories at import, with the same arguments: one
:meth:`~agentproto._core.wire.converter.WireConverter.recipe` decides both, so the two
ways cannot drift apart.

A sealed loaders module also needs to know that it was generated with the classes
it loads: :func:`check_stamp` refuses a pair generated from different schemas.
"""

from __future__ import annotations

import importlib
import importlib.util
import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agentproto._core.describe import describe
from agentproto._core.errors import SchemaError
from agentproto._core.wire.checks import (
    MISSING,
    Context,
    Unrecognised,
    escape_pointer,
    json_type,
    load_int,
    load_number,
    type_error,
    wire_error,
)

__all__ = [
    "CheckedDumper",
    "Loader",
    "SlowPath",
    "any_loader",
    "by_method_loader",
    "check_stamp",
    "compiled_module",
    "dump_foreign",
    "exact_loader",
    "int_loader",
    "list_loader",
    "literal_loader",
    "number_loader",
    "object_loader",
    "reject_unknown",
    "set_foreign_converter",
    "tagged_loader",
    "union_loader",
    "value_dumper",
]

Loader = Callable[[Any, str, Context], Any]
Shape = tuple[frozenset[str], frozenset[str]]
"""(required wire names, all wire names) of a class."""
Candidate = tuple[frozenset[type] | None, Loader, Shape | None]
"""A union member: the JSON value classes it may accept, its loader, its shape."""


_FOREIGN: list[Callable[[str], Any]] = []
"""The converter factory of :func:`dump_foreign`, by module name (the wire converter
registers it when it is imported: this module cannot import the converter, which
imports it)."""


def set_foreign_converter(factory: Callable[[str], Any]) -> None:
    """Make ``factory(module_name)`` the converter :func:`dump_foreign` dumps with."""
    _FOREIGN[:] = [factory]


def dump_foreign(value: Any) -> Any:
    """A nested value a sealed module has no dumper for: an attrs instance of a
    class defined elsewhere is dumped by a converter for its own module."""
    if not attrs.has(value.__class__):
        return value
    return _FOREIGN[0](value.__class__.__module__).dump(value)


def check_stamp(classes: Any, stamp: str, loaders: str) -> None:
    """Refuse a loaders module generated from another schema than its classes.

    Raises:
        ImportError: the classes module's schema hash is not ``stamp``.
    """
    if getattr(classes, "_SCHEMA_SHA256", None) != stamp:
        raise ImportError(
            f"{loaders} was generated from another schema than {classes.__name__}; "
            "regenerate both with `python -m codegen`"
        )


def compiled_module(name: str) -> types.ModuleType | None:
    """The module ``name`` when the installed build compiled it (a C extension), else
    ``None``; a pure-Python copy is not imported (the native loaders are slower than
    the plain ones when interpreted, and a long module to import)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None or spec.origin.endswith(".py"):
        return None
    return importlib.import_module(name)


def any_loader(v: Any, p: str, c: Context) -> Any:
    """Any JSON value, kept as it is (checked for depth when it comes from Python)."""
    if c.deep is not None and (v.__class__ is dict or v.__class__ is list):
        c.deep(v, p)
    return v


def object_loader(v: Any, p: str, c: Context) -> Any:
    """Any JSON object, kept as it is."""
    if v.__class__ is not dict:
        raise type_error("object", v, p)
    if c.deep is not None:
        c.deep(v, p)
    return v


def int_loader(v: Any, p: str, c: Context) -> int:
    """A JSON integer (an integral float becomes an ``int``)."""
    return load_int(v, p)


def number_loader(v: Any, p: str, c: Context) -> float | int:
    """A JSON number."""
    return load_number(v, p)


def exact_loader(tp: type, expected: str) -> Loader:
    """A value of exactly class ``tp`` (``str``, ``bool``), named ``expected``."""

    def load_exact(v: Any, p: str, c: Context) -> Any:
        if v.__class__ is not tp:
            raise type_error(expected, v, p)
        return v

    return load_exact


def literal_loader(values: tuple[Any, ...]) -> Loader:
    """One of ``values`` (a ``const`` with one value, else an ``enum``).

    Parsing tolerantly, an unknown string of an enumeration is :class:`Unrecognised`.
    """
    keyword = "const" if len(values) == 1 else "enum"

    def load_literal(v: Any, p: str, c: Context) -> Any:
        if v.__class__ is not str or v not in values:
            if v.__class__ in (int, bool) and v in values and v.__class__ is values[0].__class__:
                return v
            detail = f"{describe(v)} is not one of {list(values)!r}"
            if c.diagnostics is not None and keyword == "enum" and v.__class__ is str:
                raise Unrecognised(p, f"unknown enumeration value {detail}", keyword)
            raise wire_error(keyword, p, detail)
        return v

    return load_literal


def list_loader(item: Loader, skip_invalid: bool) -> Loader:
    """A JSON array of ``item`` values.

    Parsing tolerantly, an unknown member is dropped with a diagnostic, and with
    ``skip_invalid`` (ACP's ``x-deserialize-skip-invalid-items``) so is an invalid one.
    """

    def load_list(v: Any, p: str, c: Context) -> Any:
        if v.__class__ is not list:
            raise type_error("array", v, p)
        if c.diagnostics is None:
            return [item(x, f"{p}/{i}", c) for i, x in enumerate(v)]
        out = []
        for i, x in enumerate(v):
            try:
                out.append(item(x, f"{p}/{i}", c))
            except Unrecognised as unknown:
                c.report("unknown-member-dropped", unknown.path, unknown.detail)
            except SchemaError as exc:
                if not skip_invalid:
                    raise
                c.report("invalid-item-skipped", f"{p}/{i}", f"skipped: {exc}")
        return out

    return load_list


def union_loader(candidates: tuple[Candidate, ...]) -> Loader:
    """A union without a tag: the members whose JSON type fits are tried in turn.

    Classes come first, best match first: all required members present, then the
    most members of the object declared; the rest keep their order.
    """
    shaped = any(shape is not None for _, _, shape in candidates)

    def ranked(v: Any, fitting: list[Candidate]) -> list[Candidate]:
        if v.__class__ is not dict or not shaped:
            return fitting
        keys = v.keys()

        def score(member: Candidate) -> tuple[int, int]:
            shape = member[2]
            if shape is None:
                return (0, -1)
            required, known = shape
            return (1 if required <= keys else 0, len(known & keys))

        return sorted(fitting, key=score, reverse=True)

    def load_union(v: Any, p: str, c: Context) -> Any:
        fitting = [m for m in candidates if m[0] is None or v.__class__ in m[0]]
        if len(fitting) == 1:
            return fitting[0][1](v, p, c)
        for member in ranked(v, fitting):
            try:
                return member[1](v, p, c)
            except SchemaError:
                continue
        raise wire_error("oneOf", p, f"{json_type(v)} value matches no alternative")

    return load_union


def tagged_loader(
    wire: str, table: Mapping[str, Loader], other: Loader | None, closed: bool
) -> Loader:
    """A union of classes dispatching on the constant field ``wire``.

    A catch-all member (``other``) takes unknown tag values. Otherwise an unknown
    tag is ``Unrecognised`` when parsing tolerantly, else a ``oneOf`` error at the
    union (closed members, or no tag) or a ``const`` error at the tag.
    """
    tag_path = "/" + escape_pointer(wire)
    known = sorted(table)
    get = table.get

    def load_tagged(v: Any, p: str, c: Context) -> Any:
        if v.__class__ is not dict:
            raise wire_error("oneOf", p, f"expected one of the {known} objects, got {json_type(v)}")
        tag = v.get(wire, MISSING)
        if tag.__class__ is str:
            fn = get(tag)
            if fn is not None:
                return fn(v, p, c)
            if other is not None:
                return other(v, p, c)
            if c.diagnostics is not None:
                raise Unrecognised(p, f"unknown {wire} {describe(tag)} (known: {known})")
        if closed or tag is MISSING:
            shown = describe(tag) if tag is not MISSING else "(missing)"
            raise wire_error("oneOf", p, f"{wire}={shown} is none of {known}")
        raise wire_error("const", p + tag_path, f"{describe(tag)} is none of {known}")

    return load_tagged


MethodLoader = Callable[[Any, str, Context, Any], Any]


def by_method_loader(table: Mapping[str, Loader], fallback: Loader) -> MethodLoader:
    """JSON-RPC ``params``: loaded as the class of the request's ``method``."""
    get = table.get

    def load_params(v: Any, p: str, c: Context, method: Any) -> Any:
        fn = get(method) if method.__class__ is str else None
        return (fn or fallback)(v, p, c)

    return load_params


def reject_unknown(d: dict[str, Any], path: str, ctx: Context, known: frozenset[str]) -> None:
    """Members of a closed object that no field takes: an error, or (parsing
    tolerantly) each dropped with an ``unknown-field`` diagnostic."""
    extra = [k for k in d if k not in known]
    if ctx.diagnostics is None:
        raise wire_error(
            "unevaluatedProperties",
            path,
            f"unknown propert{'ies' if len(extra) > 1 else 'y'} "
            + ", ".join(map(describe, extra[:10]))
            + (f" and {len(extra) - 10} more" if len(extra) > 10 else ""),
        )
    for key in extra:
        if key.__class__ is not str:  # only from Python: JSON keys are strings
            raise wire_error("type", path, f"object key {describe(key)} is not a string")
        ctx.report(
            "unknown-field",
            f"{path}/{escape_pointer(key)}",
            f"unknown property {describe(key)} dropped",
        )


Dumper = Callable[[Any], Any]
CheckedDumper = Callable[[Any, Context], Any]
"""``dump(obj, ctx)``: the JSON of ``obj``, held to the schema as it is written."""


class SlowPath(Exception):
    """Raised by a checked dumper at a value it cannot vouch for with its quick checks.

    A checked dumper (one per class in a sealed loaders module) writes a class's JSON
    and checks each value as it goes, by class identity and the loader's own value
    checks; it only ever accepts what loading its output strictly would accept. Any
    value it is unsure of (a subclass, a plain dict in place of an object, an extra
    member named like a field) raises this, and the caller dumps and checks the slow
    way, which gives the verdict and every problem.
    """


def value_dumper(dumpers: Mapping[type, Dumper], other: Dumper) -> Dumper:
    """The dumper of a nested value: its class's dumper, item by item for a list,
    else ``other`` (a class no dumper is known for, or a JSON value)."""
    get = dumpers.get

    def dump_value(value: Any) -> Any:
        dumper = get(value.__class__)
        if dumper is not None:
            return dumper(value)
        if value.__class__ is list:
            return [dump_value(item) for item in value]
        return other(value)

    return dump_value
