"""Checks shared by the wire converter and the loaders it compiles.

A loader ``load(value, path, ctx)`` raises :class:`~agentproto.SchemaError`
naming the JSON Schema keyword and the instance location; parsing tolerantly, an
unknown union member or enumeration value raises :class:`Unrecognised` instead,
which the enclosing field, list element or container turns into a diagnostic.
The scalar checks are called from compiled loader source, so they stay small.
"""

from __future__ import annotations

import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

from agentproto._core.describe import cut_pointer, describe
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import SchemaError
from agentproto._core.unset import Unset

__all__ = ["Unrecognised", "escape_pointer", "holds_list", "value_type"]

MISSING = object()
NONE_TYPES = (type(None), Unset)
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


def json_type(value: Any) -> str:
    name: str = _JSON_TYPE_NAMES.get(value.__class__, value.__class__.__name__)
    return name


class Unrecognised(Exception):
    """Tolerant mode: a value is an unknown member of a union or enumeration.

    It is not an error: the enclosing optional field is removed, the enclosing list
    element dropped, or (in a required position) the container itself removed,
    each with a diagnostic. Raised only when parsing tolerantly.
    """

    def __init__(self, path: str, detail: str, keyword: str = "oneOf") -> None:
        self.path = path
        self.detail = detail
        self.keyword = keyword
        super().__init__(f"{path}: {detail}")

    def as_error(self) -> SchemaError:
        """The error it is where nothing encloses it to drop: the unknown member is the
        value asked for (or in a required position all the way up to it), so no value is
        left; what a caller gets in place of this internal class."""
        return SchemaError(self.keyword, self.path, self.detail)


class Context:
    """Per-call state: strict or tolerant, and where diagnostics go."""

    __slots__ = ("deep", "diagnostics")

    def __init__(
        self,
        diagnostics: list[Diagnostic] | None,
        deep: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.diagnostics = diagnostics
        # for values from Python rather than from the parser: checks a free-form value
        # (at its location) for the parser's depth limit and for being JSON at all
        self.deep = deep

    def report(self, code: str, path: str, message: str) -> None:
        assert self.diagnostics is not None
        self.diagnostics.append(Diagnostic(code=code, message=message, path=cut_pointer(path)))


STRICT = Context(None)


def wire_error(keyword: str, path: str, detail: str) -> SchemaError:
    return SchemaError(keyword, path, detail)


def type_error(expected: str, value: Any, path: str) -> SchemaError:
    return SchemaError("type", path, f"expected {expected}, got {json_type(value)}")


# ---- scalar checks shared by generated code ------------------------------------------------


def load_int(value: Any, path: str) -> int:
    if value.__class__ is int:
        result: int = value
        return result
    if value.__class__ is float and math.isfinite(value) and value.is_integer():
        return int(value)
    raise type_error("integer", value, path)


def load_number(value: Any, path: str) -> float | int:
    if value.__class__ is float or value.__class__ is int:
        return typing.cast(float, value)
    raise type_error("number", value, path)


def check_constraints(value: Any, path: str, meta: dict[str, Any]) -> None:
    if "minimum" in meta and value < meta["minimum"]:
        raise wire_error(
            "minimum", path, f"{describe(value)} is less than the minimum {meta['minimum']}"
        )
    if "maximum" in meta and value > meta["maximum"]:
        raise wire_error(
            "maximum", path, f"{describe(value)} is greater than the maximum {meta['maximum']}"
        )
    if "minItems" in meta and len(value) < meta["minItems"]:
        raise wire_error("minItems", path, f"expected at least {meta['minItems']} items")
    if "minLength" in meta and len(value) < meta["minLength"]:
        raise wire_error("minLength", path, f"expected at least {meta['minLength']} characters")
    if "pattern" in meta and re.search(meta["pattern"], value) is None:
        raise wire_error("pattern", path, f"{describe(value)} does not match {meta['pattern']!r}")


def strip_none(tp: Any) -> Any:
    """``T | None | Unset`` → ``T``."""
    if is_union(tp):
        rest = [a for a in get_args(tp) if a not in NONE_TYPES]
        if len(rest) == 1:
            return rest[0]
        return typing.Union[tuple(rest)]  # noqa: UP007 (runtime construction)
    return tp


def value_type(tp: Any) -> Any:
    """The type of a field's values, ``None`` and ``UNSET`` apart (``Annotated``
    unwrapped): ``list[X] | None | Unset`` → ``list[X]``."""
    return strip_none(unwrap_annotated(tp))


def holds_list(tp: Any) -> bool:
    """Whether a value of ``tp`` may be a list: ``list[X]``, or a union with such a member."""
    tp = unwrap_annotated(tp)
    if is_union(tp):
        return any(holds_list(member) for member in get_args(tp))
    return get_origin(tp) is list


def is_union(tp: Any) -> bool:
    return get_origin(tp) in (typing.Union, types.UnionType)


def unwrap_annotated(tp: Any) -> Any:
    while get_origin(tp) is typing.Annotated:
        tp = get_args(tp)[0]
    return tp
