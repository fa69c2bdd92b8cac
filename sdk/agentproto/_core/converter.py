"""The wire converter: exact JSON ⇄ generated attrs classes.

Theory of operation. Each generated class carries, in every field's metadata,
what the schema says about the field (wire name, required, nullable, three-state
patch field, constraints, ACP's ``x-deserialize-*`` rules). From that and the
field's type, :class:`WireConverter` compiles one loader and one dumper per type,
the first time the type is used:

* a **loader** ``load(value, path, ctx)`` checks a decoded JSON value against the
  schema and builds the typed object; it raises :class:`SchemaError` naming the
  JSON Schema keyword and the instance location (``path`` is the JSON Pointer of
  ``value``), so errors read like a JSON Schema validator's;
* a **dumper** ``dump(obj)`` turns the typed object back into JSON: absent fields
  stay absent, an explicit ``null`` is kept where the type allows it, and a parsed
  document dumps back to the same document.

Class loaders and dumpers are generated Python source (as cattrs does), so the
per-field work is straight-line code. The converter is a :class:`cattrs.Converter`
whose hooks for attrs classes are these functions; there is no global converter.

Strict and tolerant parsing. Without a diagnostics list a document must match
exactly: an unknown property is an ``unevaluatedProperties`` error. With a list,
unknown properties are dropped and reported (code ``unknown-field``, with their
wire path), and ACP's ``x-deserialize-default-on-error`` /
``x-deserialize-skip-invalid-items`` rules are honoured and reported.

Unions. A union of classes that share a constant-valued field (``type``,
``role``, ``op``, ``sessionUpdate``) dispatches on it; a catch-all member
(``Other…`` classes) takes unknown tag values and keeps the rest of the object in
``extra``. An unknown tag is reported as JSON Schema validators report it: as
``oneOf`` at the union's location when its members are closed objects, else as
``const`` at the tag. Other unions dispatch on the JSON type of the value.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError
from agentproto._core.unset import UNSET, Unset

__all__ = ["Unrecognised", "WireConverter", "escape_pointer"]

T = TypeVar("T")
Loader = Callable[[Any, str, "_Context"], Any]
Dumper = Callable[[Any], Any]

_MISSING = object()
_NONE_TYPES = (type(None), Unset)
_JSON_TYPE_NAMES = {
    dict: "object",
    list: "array",
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
}


def escape_pointer(token: str) -> str:
    """Escape one JSON Pointer reference token (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def _json_type(value: Any) -> str:
    name: str = _JSON_TYPE_NAMES.get(value.__class__, value.__class__.__name__)
    return name


class Unrecognised(Exception):
    """Tolerant mode: a value is an unknown member of a union or enumeration.

    It is not an error: the enclosing optional field is removed, the enclosing list
    element dropped, or (in a required position) the container itself removed,
    each with a diagnostic. Raised only when parsing tolerantly.
    """

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"{path}: {detail}")


class _Context:
    """Per-call state: strict or tolerant, and where diagnostics go."""

    __slots__ = ("diagnostics",)

    def __init__(self, diagnostics: list[Diagnostic] | None) -> None:
        self.diagnostics = diagnostics

    def report(self, code: str, path: str, message: str) -> None:
        assert self.diagnostics is not None
        self.diagnostics.append(Diagnostic(code=code, message=message, path=path))


_STRICT = _Context(None)


def _error(keyword: str, path: str, detail: str) -> SchemaError:
    return SchemaError(keyword, path, detail)


def _type_error(expected: str, value: Any, path: str) -> SchemaError:
    return SchemaError("type", path, f"expected {expected}, got {_json_type(value)}")


# ---- scalar checks shared by generated code ------------------------------------------------


def _load_int(value: Any, path: str) -> int:
    if value.__class__ is int:
        result: int = value
        return result
    if value.__class__ is float and math.isfinite(value) and value.is_integer():
        return int(value)
    raise _type_error("integer", value, path)


def _load_number(value: Any, path: str) -> float | int:
    if value.__class__ is float or value.__class__ is int:
        return typing.cast(float, value)
    raise _type_error("number", value, path)


def _check_constraints(value: Any, path: str, meta: dict[str, Any]) -> None:
    if "minimum" in meta and value < meta["minimum"]:
        raise _error("minimum", path, f"{value} is less than the minimum {meta['minimum']}")
    if "maximum" in meta and value > meta["maximum"]:
        raise _error("maximum", path, f"{value} is greater than the maximum {meta['maximum']}")
    if "minItems" in meta and len(value) < meta["minItems"]:
        raise _error("minItems", path, f"expected at least {meta['minItems']} items")
    if "minLength" in meta and len(value) < meta["minLength"]:
        raise _error("minLength", path, f"expected at least {meta['minLength']} characters")
    if "pattern" in meta and re.search(meta["pattern"], value) is None:
        raise _error("pattern", path, f"{value!r} does not match {meta['pattern']!r}")


def _strip_none(tp: Any) -> Any:
    """``T | None | Unset`` → ``T``."""
    if _is_union(tp):
        rest = [a for a in get_args(tp) if a not in _NONE_TYPES]
        if len(rest) == 1:
            return rest[0]
        return typing.Union[tuple(rest)]  # noqa: UP007 (runtime construction)
    return tp


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def _unwrap_annotated(tp: Any) -> Any:
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    return tp


class WireConverter(cattrs.Converter):
    """A cattrs converter for one protocol's generated classes.

    Args:
        namespace: the generated module; its annotations are resolved there.
    """

    def __init__(self, namespace: types.ModuleType) -> None:
        super().__init__()
        self._namespace = namespace
        self._loaders: dict[Any, Loader] = {}
        self._dumpers: dict[type, Dumper] = {}
        self.register_structure_hook_factory(attrs.has, self._structure_hook)
        self.register_unstructure_hook_factory(attrs.has, self._unstructure_hook)

    # ---- public --------------------------------------------------------------------------

    def load(self, value: Any, tp: Any, *, diagnostics: list[Diagnostic] | None = None) -> Any:
        """Check ``value`` (decoded JSON) against ``tp`` and build it.

        Args:
            value: a decoded JSON value.
            tp: a generated class, union alias or other annotation.
            diagnostics: ``None`` for strict parsing; a list to parse tolerantly,
                dropping unknown properties and reporting them there.

        Raises:
            SchemaError: the value does not match the schema.
        """
        ctx = _STRICT if diagnostics is None else _Context(diagnostics)
        return self.loader(tp)(value, "", ctx)

    def dump(self, obj: Any) -> Any:
        """The JSON value of a typed object (dicts, lists and scalars)."""
        dumper = self._dumpers.get(obj.__class__)
        if dumper is None:
            if attrs.has(obj.__class__):
                dumper = self._compile_dumper(obj.__class__)
            elif isinstance(obj, list):
                return [self.dump(item) for item in obj]
            else:
                return obj
        return dumper(obj)

    def loader(self, tp: Any) -> Loader:
        """The compiled loader of ``tp`` (cached)."""
        loader = self._loaders.get(tp)
        if loader is None:
            loader = self._compile_loader(tp)
        return loader

    # ---- cattrs hooks --------------------------------------------------------------------

    def _structure_hook(self, cls: type) -> Callable[[Any, Any], Any]:
        def hook(value: Any, _: Any) -> Any:
            return self.loader(cls)(value, "", _STRICT)

        return hook

    def _unstructure_hook(self, cls: type) -> Callable[[Any], Any]:
        return lambda obj: self.dump(obj)

    # ---- loaders -------------------------------------------------------------------------

    def _compile_loader(self, tp: Any) -> Loader:
        tp = _unwrap_annotated(tp)
        if attrs.has(tp):
            # recursion-safe: register a trampoline before compiling the body
            cell: list[Loader] = []
            self._loaders[tp] = lambda v, p, c: cell[0](v, p, c)
            loader = self._compile_class_loader(tp)
            cell.append(loader)
            self._loaders[tp] = loader
            return loader
        loader = self._compile_type_loader(tp)
        self._loaders[tp] = loader
        return loader

    def _compile_type_loader(self, tp: Any) -> Loader:
        if tp is Any:
            return lambda v, p, c: v
        if tp is str or tp is bool or tp is dict:
            expected = {str: "string", bool: "boolean", dict: "object"}[tp]

            def load_exact(v: Any, p: str, c: _Context) -> Any:
                if v.__class__ is not tp:
                    raise _type_error(expected, v, p)
                return v

            return load_exact
        if tp is int:
            return lambda v, p, c: _load_int(v, p)
        if tp is float:
            return lambda v, p, c: _load_number(v, p)
        origin = get_origin(tp)
        if origin is Literal:
            values = get_args(tp)
            keyword = "const" if len(values) == 1 else "enum"

            def load_literal(v: Any, p: str, c: _Context) -> Any:
                if v.__class__ is not str or v not in values:
                    if (
                        v.__class__ in (int, bool)
                        and v in values
                        and v.__class__ is values[0].__class__
                    ):
                        return v
                    detail = f"{v!r} is not one of {list(values)!r}"
                    if c.diagnostics is not None and keyword == "enum" and v.__class__ is str:
                        raise Unrecognised(p, f"unknown enumeration value {detail}")
                    raise _error(keyword, p, detail)
                return v

            return load_literal
        if origin is dict:
            return self._compile_type_loader(dict)
        if origin is list:
            return self._list_loader(self.loader(get_args(tp)[0]), skip_invalid=False)
        if _is_union(tp):
            return self._compile_union_loader(tp)
        raise TypeError(f"agentproto: no loader for annotation {tp!r}")

    def _list_loader(self, item: Loader, *, skip_invalid: bool) -> Loader:
        def load_list(v: Any, p: str, c: _Context) -> Any:
            if v.__class__ is not list:
                raise _type_error("array", v, p)
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

    def _compile_union_loader(self, tp: Any) -> Loader:
        members = [_unwrap_annotated(m) for m in get_args(tp) if m not in _NONE_TYPES]
        classes = [m for m in members if attrs.has(m)]
        if classes and len(classes) == len(members):
            tagged = self._tagged_union(classes)
            if tagged is not None:
                return tagged
        candidates = [(self._json_classes(m), m) for m in members]
        shapes = {m: self._shape(m) for m in classes}

        def ranked(v: Any, fitting: list[Any]) -> list[Any]:
            """Classes first, best match first: all required members present, then
            the most members of the object declared; the rest keep their order."""
            if v.__class__ is not dict or not shapes:
                return fitting
            keys = v.keys()

            def score(member: Any) -> tuple[int, int]:
                shape = shapes.get(member)
                if shape is None:
                    return (0, -1)
                required, known = shape
                return (1 if required <= keys else 0, len(known & keys))

            return sorted(fitting, key=score, reverse=True)

        def load_union(v: Any, p: str, c: _Context) -> Any:
            fitting = [m for kinds, m in candidates if kinds is None or v.__class__ in kinds]
            if len(fitting) == 1:
                return self.loader(fitting[0])(v, p, c)
            for member in ranked(v, fitting):
                try:
                    return self.loader(member)(v, p, c)
                except SchemaError:
                    continue
            raise _error("oneOf", p, f"{_json_type(v)} value matches no alternative")

        return load_union

    @staticmethod
    def _shape(cls: type) -> tuple[frozenset[str], frozenset[str]]:
        """(required wire names, all wire names) of a class."""
        fields = [f for f in attrs.fields(cls) if "wire" in f.metadata]
        required = frozenset(f.metadata["wire"] for f in fields if f.metadata.get("required"))
        return required, frozenset(f.metadata["wire"] for f in fields)

    def method_loader(self, tp: Any) -> Callable[[Any, str, _Context, Any], Any] | None:
        """For a union of JSON-RPC params classes: a loader choosing by ``method``.

        Request classes carry the method they belong to; a ``params`` member is
        loaded as the class of its request's ``method`` (falling back to the
        general union loader for a method no class claims, such as extensions).
        """
        members = [m for m in get_args(tp) if m not in _NONE_TYPES]
        table = {
            getattr(m, "__agentproto_method__"): self.loader(m)  # noqa: B009
            for m in members
            if attrs.has(m) and getattr(m, "__agentproto_method__", None)
        }
        if not table:
            return None
        fallback = self.loader(tp)

        def load_params(v: Any, p: str, c: _Context, method: Any) -> Any:
            fn = table.get(method) if method.__class__ is str else None
            return (fn or fallback)(v, p, c)

        return load_params

    def _json_classes(self, tp: Any) -> frozenset[type] | None:
        """JSON value classes a type may accept (``None`` = any)."""
        tp = _unwrap_annotated(tp)
        origin = get_origin(tp)
        if tp is Any:
            return None
        if attrs.has(tp) or tp is dict or origin is dict:
            return frozenset({dict})
        if tp is list or origin is list:
            return frozenset({list})
        if tp is int:
            return frozenset({int, float})
        if tp is float:
            return frozenset({int, float})
        if origin is Literal:
            return frozenset(type(v) for v in get_args(tp))
        if _is_union(tp):
            kinds: set[type] = set()
            for member in get_args(tp):
                sub = self._json_classes(member)
                if sub is None:
                    return None
                kinds |= sub
            return frozenset(kinds)
        return frozenset({tp})

    def _tagged_union(self, classes: list[type]) -> Loader | None:
        tag_wire: str | None = None
        table: dict[str, Loader] = {}
        other: type | None = None
        for cls in classes:
            if getattr(cls, "__agentproto_other__", False):
                other = cls
                continue
            consts = {
                f.metadata["wire"]: f.metadata["const"]
                for f in attrs.fields(cls)
                if "const" in f.metadata and f.metadata.get("required")
            }
            if tag_wire is None:
                common = set(consts)
                for other_cls in classes:
                    if other_cls is cls or getattr(other_cls, "__agentproto_other__", False):
                        continue
                    common &= {
                        f.metadata["wire"]
                        for f in attrs.fields(other_cls)
                        if "const" in f.metadata and f.metadata.get("required")
                    }
                if not common:
                    return None
                tag_wire = sorted(common)[0]
            if tag_wire not in consts:
                return None
            table[consts[tag_wire]] = self.loader(cls)
        if tag_wire is None:
            return None
        closed = any(getattr(cls, "__agentproto_closed__", False) for cls in classes)
        other_loader = self.loader(other) if other is not None else None
        wire = tag_wire
        tag_path = "/" + escape_pointer(wire)
        known = sorted(table)

        def load_tagged(v: Any, p: str, c: _Context) -> Any:
            if v.__class__ is not dict:
                raise _error(
                    "oneOf", p, f"expected one of the {known} objects, got {_json_type(v)}"
                )
            tag = v.get(wire, _MISSING)
            if tag.__class__ is str:
                fn = table.get(tag)
                if fn is not None:
                    return fn(v, p, c)
                if other_loader is not None:
                    return other_loader(v, p, c)
                if c.diagnostics is not None:
                    raise Unrecognised(p, f"unknown {wire} {tag!r} (known: {known})")
            if closed or tag is _MISSING:
                raise _error(
                    "oneOf",
                    p,
                    f"{wire}={tag if tag is not _MISSING else '(missing)'!r} is none of {known}",
                )
            raise _error("const", p + tag_path, f"{tag!r} is none of {known}")

        return load_tagged

    def _compile_class_loader(self, cls: type) -> Loader:
        hints = typing.get_type_hints(cls, vars(self._namespace))
        fields = attrs.fields(cls)
        env: dict[str, Any] = {
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
            "unknown": self._unknown,
            "Unrecognised": Unrecognised,
        }
        closed = getattr(cls, "__agentproto_closed__", False)
        lines = [
            "def load(d, p, c):",
            "    if d.__class__ is not dict:",
            "        raise type_error('object', d, p)",
            "    o = new(cls)",
            "    n = 0",
        ]
        known: list[str] = []
        # required fields first: once they are read, an object holding nothing else
        # (most nested objects: a content block without annotations) takes the short way
        ordered = sorted(
            (f for f in fields if not f.metadata.get("extra")),
            key=lambda f: not f.metadata.get("required"),
        )
        n_required = sum(1 for f in ordered if f.metadata.get("required"))
        defaults = [
            f"o.{f.name} = {'UNSET' if f.metadata.get('patch') else 'None'}"
            for f in ordered
            if not f.metadata.get("required")
        ]
        if not closed:
            defaults.append("o.extra = None")
        for index, field in enumerate(ordered):
            meta = field.metadata
            if index == n_required and defaults:
                lines.append(f"    if n == len(d):  # {n_required} required, nothing else")
                lines.extend(f"        {line}" for line in defaults)
                lines.append("        return o")
            wire = meta["wire"]
            known.append(wire)
            tp = _strip_none(_unwrap_annotated(hints[field.name]))
            fpath = f"p + {('/' + escape_pointer(wire))!r}"
            name = field.name
            lines.append(f"    v = d.get({wire!r}, MISSING)")
            lines.append("    if v is MISSING:")
            if meta.get("required"):
                message = f"missing required property {wire!r}"
                lines.append(f"        raise err('required', p, {message!r})")
            else:
                lines.append(f"        o.{name} = {'UNSET' if meta.get('patch') else 'None'}")
            lines.append("    else:")
            lines.append("        n += 1")
            body: list[str] = []
            if meta.get("nullable") or meta.get("patch"):
                body.append("if v is None:")
                body.append(f"    o.{name} = None")
                body.append("else:")
                indent = "    "
            else:
                indent = ""
            check = self._value_code(tp, meta, f"F{index}", fpath, env)
            default = "UNSET" if meta.get("patch") else "None"
            guarded = meta.get("on_error") == "default" and bool(check)
            # an unknown union member or enum value in an optional field removes the field
            strippable = not meta.get("required") and any(f"F{index}(" in ln for ln in check)
            if guarded or strippable:
                body.append(f"{indent}try:")
                body.extend(f"{indent}    {line}" for line in check)
                if strippable:
                    body += [
                        f"{indent}except Unrecognised as u:",
                        f"{indent}    c.report('unknown-member-stripped', u.path, u.detail)",
                        f"{indent}    v = {default}",
                    ]
                if guarded:
                    body += [
                        f"{indent}except SchemaError as exc:",
                        f"{indent}    if c.diagnostics is None:",
                        f"{indent}        raise",
                        f"{indent}    c.report('invalid-field-defaulted', {fpath}, str(exc))",
                        f"{indent}    v = {default}",
                    ]
            else:
                body.extend(f"{indent}{line}" for line in check)
            body.append(f"{indent}o.{name} = v")
            lines.extend(f"        {line}" for line in body)
        env["KNOWN"] = frozenset(known)
        lines.append("    if n != len(d):")
        if closed:
            lines.append("        unknown(d, p, c, KNOWN)")
        else:
            lines.append("        o.extra = {k: x for k, x in d.items() if k not in KNOWN}")
            lines.append("    else:")
            lines.append("        o.extra = None")
        lines.append("    return o")
        source = "\n".join(lines)
        exec(compile(source, f"<agentproto loader {cls.__qualname__}>", "exec"), env)
        loader: Loader = env["load"]
        return loader

    def _value_code(
        self, tp: Any, meta: dict[str, Any], slot: str, fpath: str, env: dict[str, Any]
    ) -> list[str]:
        """Lines that check/convert ``v`` for a field of type ``tp``."""
        lines: list[str] = []
        constrained = any(
            k in meta for k in ("minimum", "maximum", "minItems", "minLength", "pattern")
        )
        if tp is Any:
            if meta.get("not_null"):
                lines.append("if v is None:")
                lines.append(f"    raise err('not', {fpath}, 'null is not allowed here')")
        elif tp is str:
            lines.append("if v.__class__ is not str:")
            lines.append(f"    raise type_error('string', v, {fpath})")
        elif tp is bool:
            lines.append("if v.__class__ is not bool:")
            lines.append(f"    raise type_error('boolean', v, {fpath})")
        elif tp is int:
            lines.append("if v.__class__ is not int:")
            lines.append(f"    v = load_int(v, {fpath})")
        elif tp is float:
            lines.append("if v.__class__ is not float:")
            lines.append(f"    v = load_number(v, {fpath})")
        elif get_origin(tp) is dict or tp is dict:
            lines.append("if v.__class__ is not dict:")
            lines.append(f"    raise type_error('object', v, {fpath})")
        elif (
            get_origin(tp) is Literal
            and len(get_args(tp)) == 1
            and isinstance(get_args(tp)[0], str)
        ):
            const = get_args(tp)[0]
            lines.append(f"if v != {const!r} or v.__class__ is not str:")
            suffix = f" is not {const!r}"
            lines.append(f"    raise err('const', {fpath}, repr(v) + {suffix!r})")
        else:
            if get_origin(tp) is list and meta.get("skip_invalid_items"):
                env[slot] = self._list_loader(self.loader(get_args(tp)[0]), skip_invalid=True)
            elif meta.get("wire") == "params" and (by_method := self.method_loader(tp)):
                env[slot] = by_method
                lines.append(f"v = {slot}(v, {fpath}, c, getattr(o, 'method', None))")
                return lines
            else:
                env[slot] = self.loader(tp)
            lines.append(f"v = {slot}(v, {fpath}, c)")
        if constrained:
            # bounds are compared inline (the common case: timestamps); the rest is rarer
            for key, op in (("minimum", "<"), ("maximum", ">")):
                if key in meta:
                    lines.append(f"if v {op} {meta[key]!r}:")
                    lines.append(f"    check(v, {fpath}, {slot}_meta)")
            if any(k in meta for k in ("minItems", "minLength", "pattern")):
                lines.append(f"check(v, {fpath}, {slot}_meta)")
            env[slot + "_meta"] = meta
        if "item" in meta:
            env[slot + "_item"] = meta["item"]
            lines.append("for i, x in enumerate(v):")
            lines.append(f"    check(x, {fpath} + '/' + str(i), {slot}_item)")
        return lines

    @staticmethod
    def _unknown(d: dict[str, Any], path: str, ctx: _Context, known: frozenset[str]) -> None:
        extra = [k for k in d if k not in known]
        if ctx.diagnostics is None:
            raise _error(
                "unevaluatedProperties",
                path,
                f"unknown propert{'ies' if len(extra) > 1 else 'y'} {extra!r}",
            )
        for key in extra:
            ctx.report(
                "unknown-field",
                f"{path}/{escape_pointer(key)}",
                f"unknown property {key!r} dropped",
            )

    # ---- dumpers -------------------------------------------------------------------------

    def _compile_dumper(self, cls: type) -> Dumper:
        hints = typing.get_type_hints(cls, vars(self._namespace))
        env: dict[str, Any] = {"UNSET": UNSET, "dv": self._dump_value}
        lines = ["def dump(o):", "    d = {}"]
        other = False
        for field in attrs.fields(cls):
            meta = field.metadata
            if meta.get("extra"):
                other = True
                continue
            wire = meta["wire"]
            tp = _strip_none(_unwrap_annotated(hints[field.name]))
            plain = self._is_plain(tp)
            value = "v" if plain else "dv(v)"
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
        exec(compile("\n".join(lines), f"<agentproto dumper {cls.__qualname__}>", "exec"), env)
        dumper: Dumper = env["dump"]
        self._dumpers[cls] = dumper
        return dumper

    def _is_plain(self, tp: Any) -> bool:
        """True when values of ``tp`` are JSON already (no class inside)."""
        if tp in (Any, str, int, float, bool, dict) or get_origin(tp) in (dict, Literal):
            return True
        if get_origin(tp) is list:
            return self._is_plain(get_args(tp)[0])
        if _is_union(tp):
            return all(self._is_plain(a) for a in get_args(tp))
        return False

    def _dump_value(self, value: Any) -> Any:
        dumper = self._dumpers.get(value.__class__)
        if dumper is not None:
            return dumper(value)
        if value.__class__ is list:
            return [self._dump_value(item) for item in value]
        if attrs.has(value.__class__):
            return self._compile_dumper(value.__class__)(value)
        return value
