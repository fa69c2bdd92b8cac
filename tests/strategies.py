"""Shared Hypothesis strategies: valid instances of the generated schema classes.

:func:`instances` reads what a generated class says about each field (its type
hint and the ``metadata`` the codegen writes: ``wire``, ``required``,
``nullable``, ``patch``, ``const``, constraints, ``not_null``, ``item``) and
builds a strategy of valid instances, the ones a document on the wire can
denote:

* optional fields are ``None`` (absent) or a value; required nullable fields may
  be ``None``; three-state patch fields are ``UNSET``, ``None`` or a value;
* constant tag fields keep their constant; a catch-all member (``Other…``) gets a
  tag none of the known members of its union uses;
* ``extra`` of an open class is ``None`` or a non-empty dict whose keys are not
  wire names of the class (an empty dict and ``None`` are the same document);
* ``int`` fields get ints only, ``float`` fields ints or finite floats, any-JSON
  fields small JSON values (no ``null`` where the field is ``not_null``);
* in a union that dispatches on the JSON type, an any-JSON member only yields
  non-object values, so a plain object never stands for a typed class member.

Nesting is capped: past :data:`MAX_DEPTH` optional fields are absent, patch
fields omitted and lists as short as their ``minItems`` allow. Strategies are
cached per module, type and depth.
"""

from __future__ import annotations

import functools
import types
import typing
from typing import Any, Literal, get_args, get_origin

import attrs
from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from agentproto._core.unset import UNSET, Unset

__all__ = ["MAX_DEPTH", "any_json", "instances", "json_objects", "json_pointers", "json_values"]

MAX_DEPTH = 3
"""Nesting depth past which optional content is left out."""

_MAX_SAFE = 2**53 - 1
_NONE_TYPES = (type(None), Unset)
JSON_POINTER_PATTERN = "^(/([^/~]|~[01])*)*$"

# ---- plain JSON ---------------------------------------------------------------------------

_text = st.text(max_size=12)
_ints = st.integers(min_value=-_MAX_SAFE, max_value=_MAX_SAFE)
_floats = st.floats(allow_nan=False, allow_infinity=False)
_non_null_scalars = st.one_of(st.booleans(), _ints, _floats, _text)


def _containers(children: SearchStrategy[Any]) -> SearchStrategy[Any]:
    return st.lists(children, max_size=3) | st.dictionaries(_text, children, max_size=3)


_json = st.recursive(st.none() | _non_null_scalars, _containers, max_leaves=6)


def json_values(
    *, not_null: bool = False, objects: bool = True, shallow: bool = False
) -> SearchStrategy[Any]:
    """Small JSON values (finite numbers, text, short lists and objects).

    Args:
        not_null: leave out a top-level ``null``.
        objects: allow a top-level JSON object.
        shallow: scalars only (used past the depth cap).
    """
    scalars = _non_null_scalars if not_null else st.none() | _non_null_scalars
    if shallow:
        return scalars
    containers: SearchStrategy[Any] = st.lists(_json, max_size=3)
    if objects:
        containers = containers | st.dictionaries(_text, _json, max_size=3)
    return scalars | containers


def json_objects(*, shallow: bool = False) -> SearchStrategy[dict[str, Any]]:
    """Small JSON objects."""
    values = json_values(shallow=True) if shallow else _json
    return st.dictionaries(_text, values, max_size=0 if shallow else 3)


any_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
"""Any JSON value, integers of any size: what the one parser reads and writes exactly."""

_pointer_tokens = st.text(alphabet=st.sampled_from("ab~/c1 é"), max_size=4).map(
    lambda token: token.replace("~", "~0").replace("/", "~1")
)


def json_pointers() -> SearchStrategy[str]:
    """JSON Pointers (RFC 6901) like ``""`` or ``"/a/b~0c~1d"``."""
    return st.lists(_pointer_tokens, max_size=4).map(
        lambda tokens: "".join("/" + t for t in tokens)
    )


# ---- type helpers -------------------------------------------------------------------------


def _is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    return tp


def _members(tp: Any) -> list[Any]:
    """The non-``None``/``Unset`` members of a union, flattened and unwrapped."""
    out: list[Any] = []
    for arg in get_args(tp):
        arg = _unwrap(arg)
        if arg in _NONE_TYPES:
            continue
        if _is_union(arg):
            out.extend(_members(arg))
        else:
            out.append(arg)
    return out


def _strip_none(tp: Any) -> Any:
    tp = _unwrap(tp)
    if not _is_union(tp):
        return tp
    rest = _members(tp)
    if len(rest) == 1:
        return rest[0]
    return typing.Union[tuple(rest)]  # noqa: UP007 (runtime construction)


def _is_class(tp: Any) -> bool:
    return isinstance(tp, type) and attrs.has(tp)


def _const_fields(cls: type) -> dict[str, Any]:
    return {
        f.metadata["wire"]: f.metadata["const"]
        for f in attrs.fields(cls)
        if "const" in f.metadata and f.metadata.get("required")
    }


# ---- the builder --------------------------------------------------------------------------


class _Builder:
    """Strategies for one generated module."""

    def __init__(self, module: types.ModuleType) -> None:
        self.module = module
        self.namespace = vars(module)
        self.cache: dict[tuple[Any, int, bool], SearchStrategy[Any]] = {}
        self._other_tags: dict[type, tuple[str, frozenset[str]]] | None = None

    # -- catch-all members ----------------------------------------------------------------

    def _unions(self) -> list[Any]:
        """Every union in the module: aliases and the (list item) types of fields."""
        found: list[Any] = []

        def visit(tp: Any) -> None:
            tp = _unwrap(tp)
            if _is_union(tp):
                found.append(tp)
            for arg in get_args(tp):
                if not isinstance(arg, str):
                    visit(arg)

        for name, value in self.namespace.items():
            if _is_class(value) and value.__module__ == self.module.__name__:
                try:
                    hints = typing.get_type_hints(value, self.namespace)
                except TypeError:
                    continue
                for hint in hints.values():
                    visit(hint)
            elif not name.startswith("_"):
                visit(value)
        return found

    def other_tag(self, cls: type) -> tuple[str, frozenset[str]]:
        """The tag wire name of a catch-all class and the tags it must not take."""
        if self._other_tags is None:
            table: dict[type, tuple[str, set[str]]] = {}
            for union in self._unions():
                members = [m for m in _members(union) if _is_class(m)]
                others = [m for m in members if getattr(m, "__agentproto_other__", False)]
                known = [m for m in members if m not in others]
                for other in others:
                    # the tag: a required field of the catch-all that known members fix
                    # (a member without it, like MCP's titled items, is told apart by shape)
                    required = {
                        f.metadata["wire"]
                        for f in attrs.fields(other)
                        if f.metadata.get("required")
                    }
                    for wire in sorted(required):
                        tags = {
                            str(_const_fields(m)[wire]) for m in known if wire in _const_fields(m)
                        }
                        if tags:
                            entry = table.setdefault(other, (wire, set()))
                            if entry[0] == wire:
                                entry[1].update(tags)
                            break
            self._other_tags = {k: (w, frozenset(t)) for k, (w, t) in table.items()}
        if cls not in self._other_tags:
            raise LookupError(f"{cls.__qualname__}: no union names its known tags")
        return self._other_tags[cls]

    # -- types ----------------------------------------------------------------------------

    def strategy(self, tp: Any, depth: int, *, in_union: bool = False) -> SearchStrategy[Any]:
        """Values of annotation ``tp`` at nesting ``depth`` (cached)."""
        tp = _unwrap(tp)
        key = (tp, min(depth, MAX_DEPTH + 1), in_union)
        cached = self.cache.get(key)
        if cached is None:
            cached = st.deferred(lambda: self._build(tp, key[1], in_union))
            self.cache[key] = cached
        return cached

    def _build(self, tp: Any, depth: int, in_union: bool) -> SearchStrategy[Any]:
        deep = depth > MAX_DEPTH
        if tp is Any:
            # a plain object in a union with classes would be read as one of them
            return json_values(objects=not in_union, shallow=deep)
        if tp is str:
            return _text
        if tp is bool:
            return st.booleans()
        if tp is int:
            return _ints
        if tp is float:
            return _ints | _floats
        if tp is dict or get_origin(tp) is dict:
            return json_objects(shallow=deep)
        origin = get_origin(tp)
        if origin is Literal:
            return st.sampled_from(get_args(tp))
        if origin is list:
            return self._list(get_args(tp)[0], {}, {}, depth)
        if _is_union(tp):
            members = _members(tp)
            has_class = any(_is_class(m) for m in members)
            return st.one_of(
                [self.strategy(m, depth, in_union=has_class and m is Any) for m in members]
            )
        if _is_class(tp):
            return self._class(tp, depth)
        raise TypeError(f"strategies: no strategy for {tp!r}")

    def _list(
        self, item_tp: Any, meta: dict[str, Any], item_meta: dict[str, Any], depth: int
    ) -> SearchStrategy[list[Any]]:
        min_size = int(meta.get("minItems", 0))
        max_size = min_size if depth > MAX_DEPTH else min_size + 2
        items = self._constrained(item_tp, item_meta, depth + 1)
        return st.lists(items, min_size=min_size, max_size=max_size)

    def _constrained(self, tp: Any, meta: dict[str, Any], depth: int) -> SearchStrategy[Any]:
        """Values of ``tp`` (``None``/``Unset`` stripped) that meet the field's constraints."""
        tp = _strip_none(tp)
        if meta.get("pattern") == JSON_POINTER_PATTERN:
            return json_pointers()
        if "pattern" in meta:
            return st.from_regex(meta["pattern"])
        if tp is int and ("minimum" in meta or "maximum" in meta):
            return st.integers(
                min_value=meta.get("minimum", -_MAX_SAFE), max_value=meta.get("maximum", _MAX_SAFE)
            )
        if tp is float and ("minimum" in meta or "maximum" in meta):
            low, high = meta.get("minimum"), meta.get("maximum")
            ints = st.integers(
                min_value=-_MAX_SAFE if low is None else -int(-low // 1),
                max_value=_MAX_SAFE if high is None else int(high // 1),
            )
            return ints | st.floats(
                min_value=low, max_value=high, allow_nan=False, allow_infinity=False
            )
        if tp is str and "minLength" in meta:
            return st.text(min_size=int(meta["minLength"]), max_size=int(meta["minLength"]) + 12)
        if get_origin(tp) is list:
            return self._list(get_args(tp)[0], meta, meta.get("item", {}), depth)
        if tp is Any and meta.get("not_null"):
            return json_values(not_null=True, shallow=depth > MAX_DEPTH)
        return self.strategy(tp, depth)

    # -- classes --------------------------------------------------------------------------

    def _class(self, cls: type, depth: int) -> SearchStrategy[Any]:
        hints = typing.get_type_hints(cls, self.namespace)
        deep = depth >= MAX_DEPTH
        wires = {f.metadata["wire"] for f in attrs.fields(cls) if "wire" in f.metadata}
        other = getattr(cls, "__agentproto_other__", False)
        kwargs: dict[str, SearchStrategy[Any]] = {}
        for field in attrs.fields(cls):
            meta = dict(field.metadata)
            if meta.get("extra"):
                kwargs[field.alias] = st.none() if deep else _extra(wires)
                continue
            if "const" in meta:
                kwargs[field.alias] = st.just(meta["const"])
                continue
            if other and meta.get("required"):
                tag_wire, known = self.other_tag(cls)
                if meta["wire"] == tag_wire:
                    kwargs[field.alias] = _unknown_tags(known)
                    continue
            value = self._constrained(hints[field.name], meta, depth + 1)
            kwargs[field.alias] = _three_state(meta, value, deep=deep)
        methods = self._methods(hints.get("params"))
        if methods and "method" in kwargs and "params" in kwargs:
            # a JSON-RPC request names the method its params belong to: keep them consistent
            params = kwargs.pop("params")
            kwargs.pop("method")

            def with_method(value: Any) -> SearchStrategy[Any]:
                own = getattr(value, "__agentproto_method__", None)
                method = (
                    st.just(own) if own else st.text(max_size=12).filter(lambda m: m not in methods)
                )
                return st.builds(cls, params=st.just(value), method=method, **kwargs)

            return params.flatmap(with_method)
        return st.builds(cls, **kwargs)

    @staticmethod
    def _methods(tp: Any) -> frozenset[str]:
        """The JSON-RPC methods claimed by the classes of a params union."""
        if tp is None:
            return frozenset()
        return frozenset(
            m.__agentproto_method__
            for m in _members(_strip_none(tp))
            if _is_class(m) and getattr(m, "__agentproto_method__", None)
        )


def _three_state(
    meta: dict[str, Any], value: SearchStrategy[Any], *, deep: bool
) -> SearchStrategy[Any]:
    """Absent/null/value choices of a field, by its metadata."""
    if meta.get("patch"):
        return st.just(UNSET) if deep else st.sampled_from([UNSET, None]) | value
    if meta.get("required"):
        if meta.get("nullable"):
            return st.none() | value
        return value
    return st.none() if deep else st.none() | value


def _extra(wires: set[str]) -> SearchStrategy[dict[str, Any] | None]:
    keys = _text.map(lambda s: "x-" + s).filter(lambda k: k not in wires)
    return st.none() | st.dictionaries(keys, json_values(), min_size=1, max_size=3)


def _unknown_tags(known: frozenset[str]) -> SearchStrategy[str]:
    fixed = st.sampled_from(["x-unknown-kind", "_vendor_extension"])
    return (fixed | _text.map(lambda s: "x-" + s)).filter(lambda tag: tag not in known)


@functools.cache
def _builder(module: types.ModuleType) -> _Builder:
    return _Builder(module)


def instances(tp: Any, module: types.ModuleType) -> SearchStrategy[Any]:
    """Valid instances of a generated class or union alias of ``module``.

    Args:
        tp: a generated class, a union alias (``Event``, ``SessionUpdate``) or any
            annotation the generated module uses.
        module: the generated module ``tp`` belongs to (its names resolve hints).
    """
    return _builder(module).strategy(tp, 0)
