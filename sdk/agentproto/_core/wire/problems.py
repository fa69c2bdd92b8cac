"""Every problem of a rejected document, found after the fast loader stopped at one.

Theory of operation. A compiled loader (:mod:`agentproto._core.wire.converter`) raises
at the first problem: that is the common path, and it stays as fast as it is.
Only once a document has been rejected, :func:`with_all_problems` walks it again
to find the rest, by the same rules: it follows the schema's structure (a class's
fields, a list's items, the member of a tagged union whose constant fields the
value carries) and, at every value it does not take apart, asks the compiled
loader of that value's type, so each problem reads exactly as the loader would
report it. The walk costs one pass over the document, once, on the error path,
and stops after :data:`MAX_PROBLEMS`.

The first problem stays the one the loader raised (its ``keyword`` and
``location`` are what callers always saw); the others follow in document order.
"""

from __future__ import annotations

import types
import typing
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final, get_args, get_origin

import attrs

from agentproto._core.errors import DecodeError, SchemaError
from agentproto._core.wire.checks import (
    NONE_TYPES,
    Context,
    Unrecognised,
    check_constraints,
    escape_pointer,
    is_union,
    strip_none,
    type_error,
    unwrap_annotated,
    wire_error,
)
from agentproto._core.wire.loaders import reject_unknown

if TYPE_CHECKING:
    from agentproto._core.wire.converter import WireConverter

__all__ = ["MAX_PROBLEMS", "with_all_problems"]

MAX_PROBLEMS: Final = 100
"""The most problems one error lists; the walk stops there."""

_CONSTRAINTS = ("minimum", "maximum", "minItems", "minLength", "pattern")


class _Enough(Exception):
    """The walk found :data:`MAX_PROBLEMS` problems."""


def with_all_problems(
    converter: WireConverter, error: SchemaError, tp: Any, value: Any, ctx: Context
) -> SchemaError:
    """``error`` (raised loading ``value`` as ``tp`` with ``ctx``) listing every problem.

    The walk reports into a throwaway list when ``ctx`` is tolerant, so the
    caller's diagnostics are not repeated; an unknown member it meets is what
    tolerant parsing drops, not a problem.
    """
    if ctx.diagnostics is not None:
        ctx = Context([], deep=ctx.deep)
    walk = _Walk(converter, ctx)
    try:
        walk.value(tp, value, "")
    except _Enough:
        pass
    except RecursionError:  # a document nested past what the walk can follow
        return error
    mine = (error.keyword, error.location)
    others = [problem for problem in walk.found if (problem.keyword, problem.location) != mine]
    return error.with_problems(others[: MAX_PROBLEMS - 1])


class _Walk:
    """One walk over a rejected document; :attr:`found` collects its problems."""

    def __init__(self, converter: WireConverter, ctx: Context) -> None:
        self.converter = converter
        self.ctx = ctx
        self.found: list[SchemaError] = []

    def add(self, problem: SchemaError) -> None:
        self.found.append(problem)
        if len(self.found) > MAX_PROBLEMS:  # the error's own problem may be among them
            raise _Enough

    def leaf(self, tp: Any, value: Any, path: str) -> Any:
        """Load ``value`` as ``tp`` with its compiled loader; ``_ABSENT`` when it fails."""
        try:
            return self.converter.loader(tp)(value, path, self.ctx)
        except SchemaError as problem:
            self.add(problem)
        except (Unrecognised, DecodeError):  # dropped when tolerant; not a schema problem
            pass
        return _ABSENT

    def value(self, tp: Any, value: Any, path: str) -> None:
        tp = unwrap_annotated(tp)
        if attrs.has(tp):
            self.object(tp, value, path)
        elif get_origin(tp) is list:
            if value.__class__ is not list:
                self.add(type_error("array", value, path))
                return
            item = get_args(tp)[0]
            for index, element in enumerate(value):
                self.value(item, element, f"{path}/{index}")
        elif is_union(tp) and (member := _tagged_member(tp, value)) is not None:
            self.value(member, value, path)
        else:
            self.leaf(tp, value, path)

    def object(self, cls: type, value: Any, path: str) -> None:
        if value.__class__ is not dict:
            self.add(type_error("object", value, path))
            return
        hints = _hints(cls, self.converter.namespace)
        known = set()
        for field in attrs.fields(cls):
            meta = field.metadata
            if meta.get("extra"):
                continue
            wire = meta["wire"]
            known.add(wire)
            member = value.get(wire, _ABSENT)
            if member is _ABSENT:
                if meta.get("required"):
                    self.add(wire_error("required", path, f"missing required property {wire!r}"))
                continue
            if member is None and (meta.get("nullable") or meta.get("patch")):
                continue
            if self.ctx.diagnostics is not None and _tolerated(meta):
                continue
            where = f"{path}/{escape_pointer(wire)}"
            if wire == "params" and (by_method := self.converter.method_loader(hints[field.name])):
                self.params(by_method, member, where, value.get("method"))
                continue
            self.field(hints[field.name], meta, member, where)
        if getattr(cls, "__agentproto_closed__", False) and not known.issuperset(value):
            try:
                reject_unknown(value, path, self.ctx, frozenset(known))
            except SchemaError as problem:
                self.add(problem)

    def params(self, load: Any, value: Any, path: str, method: Any) -> None:
        """JSON-RPC ``params``, loaded as the class its ``method`` names (as the loader does)."""
        try:
            load(value, path, self.ctx, method)
        except SchemaError as problem:
            self.add(problem)
        except (Unrecognised, DecodeError):
            pass

    def field(self, annotation: Any, meta: Any, value: Any, path: str) -> None:
        tp = strip_none(unwrap_annotated(annotation))
        if tp is Any and meta.get("not_null") and value is None:
            self.add(wire_error("not", path, "null is not allowed here"))
            return
        if _takes_apart(tp):
            self.value(tp, value, path)
            return
        loaded = self.leaf(tp, value, path)
        if loaded is _ABSENT:
            return
        try:
            if any(key in meta for key in _CONSTRAINTS):
                check_constraints(loaded, path, meta)
            for index, element in enumerate(loaded if "item" in meta else ()):
                check_constraints(element, f"{path}/{index}", meta["item"])
        except SchemaError as problem:
            self.add(problem)


_ABSENT: Any = object()


@lru_cache(maxsize=256)
def _hints(cls: type, namespace: types.ModuleType) -> dict[str, Any]:
    """The resolved annotations of a generated class (as the loader compiler reads them)."""
    return typing.get_type_hints(cls, vars(namespace))


def _tolerated(meta: Any) -> bool:
    """Whether tolerant parsing repairs a bad value of this field rather than failing
    (ACP's ``x-deserialize-default-on-error`` / ``x-deserialize-skip-invalid-items``)."""
    return meta.get("on_error") == "default" or bool(meta.get("skip_invalid_items"))


def _takes_apart(tp: Any) -> bool:
    """Whether the walk goes inside values of ``tp`` (classes, and what holds them)."""
    if attrs.has(tp):
        return True
    if get_origin(tp) is list:
        return _takes_apart(unwrap_annotated(get_args(tp)[0]))
    if is_union(tp):
        return any(attrs.has(unwrap_annotated(m)) for m in get_args(tp))
    return False


def _tagged_member(tp: Any, value: Any) -> type | None:
    """The one class of union ``tp`` whose required constant fields ``value`` carries."""
    if value.__class__ is not dict:
        return None
    fitting = []
    for member in get_args(tp):
        member = unwrap_annotated(member)
        if member in NONE_TYPES or not attrs.has(member):
            continue
        consts = [
            (f.metadata["wire"], f.metadata["const"])
            for f in attrs.fields(member)
            if "const" in f.metadata and f.metadata.get("required")
        ]
        if consts and all(value.get(wire, _ABSENT) == const for wire, const in consts):
            fitting.append(member)
    return fitting[0] if len(fitting) == 1 else None
