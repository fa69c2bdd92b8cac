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

import functools
import re
import sys
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs

from agentproto._core.describe import cut_pointer
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import DecodeError, SchemaError
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH, check_value
from agentproto._core.unset import UNSET
from agentproto._core.wire.checks import (
    NONE_TYPES,
    Unrecognised,
    escape_pointer,
    is_union,
    strip_none,
    unwrap_annotated,
)
from agentproto._core.wire.checks import STRICT as STRICT  # re-exported for the wire modules
from agentproto._core.wire.checks import Context as Context
from agentproto._core.wire.loaders import (
    any_loader,
    by_method_loader,
    exact_loader,
    int_loader,
    list_loader,
    literal_loader,
    number_loader,
    object_loader,
    set_foreign_converter,
    tagged_loader,
    union_loader,
    value_dumper,
)
from agentproto._core.wire.prefilter import prefilter
from agentproto._core.wire.problems import with_all_problems
from agentproto._core.wire.source import (
    class_dumper_lines,
    class_loader_lines,
    compile_source,
    function_source,
    loader_env,
)

__all__ = [
    "Unrecognised",
    "WireConverter",
    "dumper_source",
    "escape_pointer",
    "loader_source",
]

T = TypeVar("T")
Loader = Callable[[Any, str, "Context"], Any]
Dumper = Callable[[Any], Any]

PLAIN_LOADERS: dict[Any, Loader] = {
    Any: any_loader,
    dict: object_loader,
    int: int_loader,
    float: number_loader,
}
_JSON_NAMES = {str: "string", bool: "boolean"}
_CONSTRAINTS = ("minimum", "maximum", "minItems", "minLength", "pattern")
# the fields whose check is written out in the class loader: the lines checking
# ``v`` at ``{fpath}``, by type (or by generic origin)
_INLINE_CHECKS: dict[Any, tuple[str, ...]] = {
    Any: (
        "if c.deep is not None and (v.__class__ is dict or v.__class__ is list):",
        "    c.deep(v, {fpath})",
    ),
    str: ("if v.__class__ is not str:", "    raise type_error('string', v, {fpath})"),
    bool: ("if v.__class__ is not bool:", "    raise type_error('boolean', v, {fpath})"),
    int: ("if v.__class__ is not int:", "    v = load_int(v, {fpath})"),
    float: ("if v.__class__ is not float:", "    v = load_number(v, {fpath})"),
    dict: (
        "if v.__class__ is not dict:",
        "    raise type_error('object', v, {fpath})",
        "if c.deep is not None:",
        "    c.deep(v, {fpath})",
    ),
}


def _check_nested(value: Any, path: str) -> None:
    """A free-form value from Python, at ``path``: JSON, and within the depth limit
    once the containers above it count (the limit bytes get from the parser)."""
    try:
        check_value(value, max_depth=DEFAULT_MAX_DEPTH - path.count("/"), finite=False)
    except DecodeError:
        raise DecodeError(
            f"the value at {cut_pointer(path)!r} nests the document deeper than "
            f"{DEFAULT_MAX_DEPTH} levels (max_depth)"
        ) from None
    except SchemaError as exc:
        raise SchemaError(exc.keyword, path + exc.location, exc.detail) from None


def _can_hold_number(tp: Any, meta: dict[str, Any]) -> bool:
    """Whether a value its field's loader accepted can hold a number of 2**63 or more."""
    tp = strip_none(unwrap_annotated(tp))
    if get_origin(tp) is Literal:
        return not all(isinstance(arg, str) for arg in get_args(tp))
    if tp is int:  # a float of 2**63 or more is out of bounds within 64 bits: refused
        low, high = meta.get("minimum"), meta.get("maximum")
        return low is None or high is None or low <= -(2**63) or high >= 2**63
    return tp not in (str, bool)


def python_context(diagnostics: list[Diagnostic] | None) -> Context:
    """The loader context for a value built in Python rather than parsed from bytes.

    The typed fields are checked by the loaders as usual; the free-form ones
    (metadata, state, content, unknown members kept) are checked for the parser's
    depth limit and for holding only JSON, where they are met. A document without
    free-form containers costs nothing more than one from the parser.
    """
    return _PYTHON_STRICT if diagnostics is None else Context(diagnostics, deep=_check_nested)


_PYTHON_STRICT = Context(None, deep=_check_nested)


class WireConverter(cattrs.Converter):
    """A cattrs converter for one protocol's generated classes.

    Args:
        namespace: the generated module; its annotations are resolved there.
        generated: its sealed loaders module (``LOADERS`` and ``DUMPERS`` tables),
            whose functions are used for every type it has; the loader or dumper of
            any other type (a class defined elsewhere) is compiled when first used.
        native: the compiled native loaders of the same classes (a ``LOADERS``
            table, ``codegen/loaders.py``), used instead of ``generated``'s.
    """

    def __init__(
        self,
        namespace: types.ModuleType,
        generated: types.ModuleType | None = None,
        native: types.ModuleType | None = None,
    ) -> None:
        super().__init__()
        self.namespace = namespace
        self._loaders: dict[Any, Loader] = {}
        self._dumpers: dict[type, Dumper] = {}
        if generated is not None:
            self._loaders.update(generated.LOADERS)
            self._dumpers.update(generated.DUMPERS)
        if native is not None:
            self._loaders.update(native.LOADERS)
        self._dump_value = value_dumper(self._dumpers, self._dump_other)
        self.register_structure_hook_factory(attrs.has, self._structure_hook)
        self.register_unstructure_hook_factory(attrs.has, self._unstructure_hook)

    # ---- public --------------------------------------------------------------------------

    def load(
        self,
        value: Any,
        tp: Any,
        *,
        diagnostics: list[Diagnostic] | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> Any:
        """Check ``value`` (decoded JSON) against ``tp`` and build it.

        Args:
            value: a decoded JSON value (from Python: it is checked to be JSON).
            tp: a generated class, union alias or other annotation.
            diagnostics: ``None`` for strict parsing; a list to parse tolerantly,
                dropping unknown properties and reporting them there.
            max_depth: the deepest nesting accepted, as for bytes.

        Raises:
            SchemaError: the value does not match the schema (its ``problems`` list
                every problem found), or is not JSON; parsing tolerantly, also an
                unknown member (union member or enumeration value) where nothing
                encloses it to drop: at the root, or in required positions up to it.
            DecodeError: the value nests deeper than ``max_depth``.
        """
        check_value(value, max_depth=max_depth)
        ctx = STRICT if diagnostics is None else Context(diagnostics)
        try:
            return self.loader(tp)(value, "", ctx)
        except SchemaError as exc:  # the rest of the document's problems, found only now
            raise with_all_problems(self, exc, tp, value, ctx) from None
        except Unrecognised as unknown:  # tolerant, and nothing encloses it to drop
            raise unknown.as_error() from None

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
            return self.loader(cls)(value, "", STRICT)

        return hook

    def _unstructure_hook(self, cls: type) -> Callable[[Any], Any]:
        return lambda obj: self.dump(obj)

    # ---- loaders -------------------------------------------------------------------------

    def _compile_loader(self, tp: Any) -> Loader:
        tp = unwrap_annotated(tp)
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

    def _build(self, factory: Callable[..., Any], *args: Any) -> Any:
        """A loader made by a :mod:`~agentproto._core.wire.loaders` factory.

        Every loader that is not a class loader is made here, so the code generator
        (which writes the call into a sealed module instead) makes the same ones.
        """
        return factory(*args)

    def _compile_type_loader(self, tp: Any) -> Loader:
        origin = get_origin(tp)
        if tp in PLAIN_LOADERS:
            return PLAIN_LOADERS[tp]
        if tp is str or tp is bool:
            return self._build(exact_loader, tp, _JSON_NAMES[tp])  # type: ignore[no-any-return]
        if origin is Literal:
            return self._build(literal_loader, get_args(tp))  # type: ignore[no-any-return]
        if origin is dict:
            return object_loader
        if origin is list:
            item = self.loader(get_args(tp)[0])
            return self._build(list_loader, item, False)  # type: ignore[no-any-return]
        if is_union(tp):
            return self._compile_union_loader(tp)
        raise TypeError(f"agentproto: no loader for annotation {tp!r}")

    def _compile_union_loader(self, tp: Any) -> Loader:
        members = [unwrap_annotated(m) for m in get_args(tp) if m not in NONE_TYPES]
        classes = [m for m in members if attrs.has(m)]
        if classes and len(classes) == len(members):
            tagged = self._tagged_union(classes)
            if tagged is not None:
                return tagged
        candidates = tuple(
            (self._json_classes(m), self.loader(m), self._shape(m) if attrs.has(m) else None)
            for m in members
        )
        return self._build(union_loader, candidates)  # type: ignore[no-any-return]

    @staticmethod
    def _shape(cls: type) -> tuple[frozenset[str], frozenset[str]]:
        """(required wire names, all wire names) of a class."""
        fields = [f for f in attrs.fields(cls) if "wire" in f.metadata]
        required = frozenset(f.metadata["wire"] for f in fields if f.metadata.get("required"))
        return required, frozenset(f.metadata["wire"] for f in fields)

    def method_loader(self, tp: Any) -> Callable[[Any, str, Context, Any], Any] | None:
        """For a union of JSON-RPC params classes: a loader choosing by ``method``.

        Request classes carry the method they belong to; a ``params`` member is
        loaded as the class of its request's ``method`` (falling back to the
        general union loader for a method no class claims, such as extensions).
        """
        members = [m for m in get_args(tp) if m not in NONE_TYPES]
        table = {
            getattr(m, "__agentproto_method__"): self.loader(m)  # noqa: B009
            for m in members
            if attrs.has(m) and getattr(m, "__agentproto_method__", None)
        }
        if not table:
            return None
        return self._build(by_method_loader, table, self.loader(tp))  # type: ignore[no-any-return]

    def _json_classes(self, tp: Any) -> frozenset[type] | None:
        """JSON value classes a type may accept (``None`` = any)."""
        tp = unwrap_annotated(tp)
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
        if is_union(tp):
            kinds: set[type] = set()
            for member in get_args(tp):
                sub = self._json_classes(member)
                if sub is None:
                    return None
                kinds |= sub
            return frozenset(kinds)
        return frozenset({tp})

    def _tagged_union(self, classes: list[type]) -> Loader | None:
        parts = self._tag_table(classes)
        if parts is None:
            return None
        return self._build(tagged_loader, *parts)  # type: ignore[no-any-return]

    def _tag_table(self, classes: list[type]) -> tuple[str, dict[str, Loader], Any, bool] | None:
        """(tag wire name, loader by tag value, catch-all loader, closed) of a union
        of classes sharing a constant field, else ``None``."""
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
        return tag_wire, table, other_loader, closed

    def _tags_of(self, tp: Any) -> tuple[str, dict[str, Loader]] | None:
        """(tag wire name, loader by tag value) when ``tp`` is a tagged union."""
        if not is_union(tp):
            return None
        members = [unwrap_annotated(m) for m in get_args(tp) if m not in NONE_TYPES]
        if not members or not all(attrs.has(m) for m in members):
            return None
        parts = self._tag_table(members)
        return None if parts is None else parts[:2]

    def _compile_class_loader(self, cls: type) -> Loader:
        """The one place a loader is compiled at run time: for a class without a
        generated loader (one a caller made, or any class of a converter built
        without its sealed loaders module)."""
        env = loader_env(cls, "")
        source = "\n".join(
            class_loader_lines(cls, self.hints(cls), self.value_code, env, "load(d, p, c)", "")
        )
        compile_source(source + "\n", f"loader {cls.__module__}.{cls.__qualname__}", env)
        loader: Loader = env["load"]
        return loader

    def hints(self, cls: type) -> dict[str, Any]:
        """The resolved annotations of ``cls`` (in the converter's namespace)."""
        return typing.get_type_hints(cls, vars(self.namespace))

    def number_members(self, cls: type) -> tuple[int, tuple[str, ...] | None]:
        """Where a document that the loader of ``cls`` accepted can hold a number (and so
        an integer orjson rounded to a float).

        Returns the member count at which it holds none (that of the required members,
        when none of them can) or -1, and the wire names of the members that can, or
        None when any can (the class keeps members it does not know). A string, a
        boolean, a string constant or an integer bounded within 64 bits is no such
        number once accepted.
        """
        hints = self.hints(cls)
        fields = [f for f in attrs.fields(cls) if not f.metadata.get("extra")]
        can = [f for f in fields if _can_hold_number(hints[f.name], f.metadata)]
        size = (
            -1
            if any(f.metadata.get("required") for f in can)
            else sum(1 for f in fields if f.metadata.get("required"))
        )
        if not getattr(cls, "__agentproto_closed__", False):
            return size, None
        return size, tuple(f.metadata["wire"] for f in can)

    def value_code(
        self, tp: Any, meta: dict[str, Any], slot: str, fpath: str, env: dict[str, Any]
    ) -> list[str]:
        """Lines that check/convert ``v`` for a field of type ``tp``."""
        constrained = any(k in meta for k in _CONSTRAINTS)
        inline = _INLINE_CHECKS.get(get_origin(tp) or tp)
        lines: list[str]
        if tp is Any and meta.get("not_null"):
            lines = ["if v is None:", f"    raise err('not', {fpath}, 'null is not allowed here')"]
            lines += [line.format(fpath=fpath) for line in _INLINE_CHECKS[Any]]
        elif inline is not None:
            lines = [line.format(fpath=fpath) for line in inline]
        elif (
            get_origin(tp) is Literal
            and len(get_args(tp)) == 1
            and isinstance(get_args(tp)[0], str)
        ):
            const = get_args(tp)[0]
            suffix = f" is not {const!r}"
            lines = [
                f"if v != {const!r} or v.__class__ is not str:",
                f"    raise err('const', {fpath}, describe(v) + {suffix!r})",
                # the module's own (interned) copy: later lookups by it compare pointers
                f"v = {const!r}",
            ]
        else:
            if get_origin(tp) is list and meta.get("skip_invalid_items"):
                env[slot] = self._build(list_loader, self.loader(get_args(tp)[0]), True)
            elif meta.get("wire") == "params" and (by_method := self.method_loader(tp)):
                env[slot] = by_method
                return [f"v = {slot}(v, {fpath}, c, getattr(o, 'method', None))"]
            else:
                env[slot] = self.loader(tp)
            lines = self._dispatch_lines(tp, meta, slot, fpath, env)
        return lines + self.constraint_lines(meta, slot, fpath, env, constrained=constrained)

    def _dispatch_lines(
        self, tp: Any, meta: dict[str, Any], slot: str, fpath: str, env: dict[str, Any]
    ) -> list[str]:
        """``v = {slot}(v, {fpath}, c)``, with a tagged union's dispatch written out:
        a known tag calls its class's loader straight away (as the union's loader
        would), for the field's value or, parsing strictly, each item of its list."""
        call = [f"v = {slot}(v, {fpath}, c)"]
        is_list = get_origin(tp) is list
        tags = self._tags_of(get_args(tp)[0] if is_list else tp)
        if tags is None:
            return call
        wire, table = tags
        env[slot + "_tags"] = table
        if not is_list:
            return [
                f"if v.__class__ is dict and (t := v.get({wire!r})).__class__ is str and "
                f"(fn := {slot}_tags.get(t)) is not None:",
                f"    v = fn(v, {fpath}, c)",
                "else:",
                f"    {call[0]}",
            ]
        env[slot + "_each"] = self.loader(get_args(tp)[0])
        return [  # the loop of a strict list loader, each item dispatched here
            "if c.diagnostics is None and v.__class__ is list:",
            f"    q = {fpath}",
            "    w = []",
            "    for i, x in enumerate(v):",
            f"        if x.__class__ is dict and (t := x.get({wire!r})).__class__ is str and "
            f"(fn := {slot}_tags.get(t)) is not None:",
            "            w.append(fn(x, f'{q}/{i}', c))",
            "        else:",
            f"            w.append({slot}_each(x, f'{{q}}/{{i}}', c))",
            "    v = w",
            "else:",
            f"    {call[0]}",
        ]

    @staticmethod
    def constraint_lines(
        meta: dict[str, Any], slot: str, fpath: str, env: dict[str, Any], *, constrained: bool
    ) -> list[str]:
        """Lines checking ``v`` against the field's constraints (and its items')."""
        lines: list[str] = []
        if constrained:
            # bounds are compared inline (the common case: timestamps); the rest is rarer
            for key, op in (("minimum", "<"), ("maximum", ">")):
                if key in meta:
                    lines.append(f"if v {op} {meta[key]!r}:")
                    lines.append(f"    check(v, {fpath}, {slot}_meta)")
            if "minItems" in meta or "minLength" in meta:
                lines.append(f"check(v, {fpath}, {slot}_meta)")
            elif "pattern" in meta:  # a faster equivalent first; the pattern decides misses
                env[slot + "_re"] = re.compile(prefilter(meta["pattern"]))
                lines.append(f"if {slot}_re.search(v) is None:")
                lines.append(f"    check(v, {fpath}, {slot}_meta)")
            env[slot + "_meta"] = meta
        if "item" in meta:
            env[slot + "_item"] = meta["item"]
            lines.append("for i, x in enumerate(v):")
            lines.append(f"    check(x, {fpath} + '/' + str(i), {slot}_item)")
        return lines

    # ---- dumpers -------------------------------------------------------------------------

    def _compile_dumper(self, cls: type) -> Dumper:
        """A class without a generated dumper: compiled now (see :meth:`loader`)."""
        env: dict[str, Any] = {"UNSET": UNSET, "dv": self._dump_value}
        source = "\n".join(class_dumper_lines(cls, self.hints(cls), self.is_plain, "dump(o)"))
        compile_source(source + "\n", f"dumper {cls.__module__}.{cls.__qualname__}", env)
        dumper: Dumper = env["dump"]
        self._dumpers[cls] = dumper
        return dumper

    def is_plain(self, tp: Any) -> bool:
        """True when values of ``tp`` are JSON already (no class inside)."""
        if tp in (Any, str, int, float, bool, dict) or get_origin(tp) in (dict, Literal):
            return True
        if get_origin(tp) is list:
            return self.is_plain(get_args(tp)[0])
        if is_union(tp):
            return all(self.is_plain(a) for a in get_args(tp))
        return False

    def _dump_other(self, value: Any) -> Any:
        """A value no dumper is known for yet: an attrs instance gets one now."""
        if attrs.has(value.__class__):
            return self._compile_dumper(value.__class__)(value)
        return value


@functools.cache
def _foreign_converter(module: str) -> Any:
    return WireConverter(sys.modules[module])


set_foreign_converter(_foreign_converter)


def loader_source(converter: WireConverter, tp: Any) -> str:
    """The Python source of the loader ``converter`` uses for ``tp`` (a maintainer's view).

    For a class: its straight-line loader, from the sealed ``_generated_loaders*`` module
    that holds it, or as compiled at run time for a class no sealed module holds (the
    source a traceback through it shows). For another annotation (a union, a list), the
    loader kit function that checks it. Example::

        from agentproto._core.wire.converter import loader_source
        from agentproto.acp import make_converter, schema
        print(loader_source(make_converter(), schema.ToolCallUpdateSessionUpdate))

    Raises:
        TypeError: the loader is not Python code (a compiled build's native loader).
    """
    return function_source(converter.loader(tp))


def dumper_source(converter: WireConverter, cls: type) -> str:
    """The Python source of the dumper ``converter`` uses for the class ``cls`` (compiled
    when none was yet, as :meth:`WireConverter.dump` would); see :func:`loader_source`."""
    dumper = converter._dumpers.get(cls) or converter._compile_dumper(cls)
    return function_source(dumper)
