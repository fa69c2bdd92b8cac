"""The JSON Schema of the run input, read from the generated classes.

Theory of operation
-------------------
Every generated class carries what the schema says about each of its fields in
the field's metadata (wire name, ``required``, ``not_null``, ``nullable``,
constraints), and its type annotation says the rest (string, integer, a tagged
union of classes, a list of something, any JSON). The wire converter compiles its
loaders from exactly these facts; :func:`json_schema` turns the same facts into a
JSON Schema (2020-12, which OpenAPI 3.1 uses), so that what a framework documents
for a request body is what the SDK checks, and a regeneration changes both. No
upstream text is copied: the schema carries names and constraints, no descriptions.

A closed class (``__agentproto_closed__``) is an object with
``additionalProperties: false``, as the published definitions forbid unknown
members; :func:`~agentproto.agui.agent_app` itself is tolerant and drops them
(reporting each). Union members become ``oneOf`` (``anyOf`` when a catch-all
member takes the values no other member claims).
"""

from __future__ import annotations

import copy
import functools
import types
import typing
from typing import Any, Final, Literal, get_args, get_origin

import attrs

from agentproto._core.errors import UsageError
from agentproto._core.wire.checks import NONE_TYPES, is_union, strip_none, unwrap_annotated
from agentproto.agui import _generated

__all__ = ["json_schema", "run_input_schema"]

JSON_SCHEMA_DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
"""The ``$schema`` of what :func:`json_schema` returns."""
_CONSTRAINTS: Final = ("minimum", "maximum", "minItems", "minLength", "pattern")
"""Field metadata keys that are JSON Schema keywords of the same name."""
_SCALARS: Final[dict[Any, dict[str, Any]]] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    dict: {"type": "object"},
}


class _Builder:
    """Walks the types reachable from one root, collecting ``$defs`` (or inlining)."""

    def __init__(self, namespace: types.ModuleType, *, inline: bool) -> None:
        self.namespace = namespace
        self.inline = inline
        self.defs: dict[str, dict[str, Any]] = {}
        self.building: set[type] = set()

    def of(self, tp: Any) -> dict[str, Any]:
        """The schema of a type annotation (``None`` members are not part of it)."""
        tp = strip_none(unwrap_annotated(tp))
        if tp is Any:
            return {}
        scalar = _SCALARS.get(tp) or _SCALARS.get(get_origin(tp))
        if scalar is not None:
            return dict(scalar)
        if attrs.has(tp):
            return self.of_class(tp)
        origin = get_origin(tp)
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else _enum(values)
        if origin is list:
            return {"type": "array", "items": self.of(get_args(tp)[0])}
        if is_union(tp):
            members = [m for m in get_args(tp) if m not in NONE_TYPES]
            catch_all = any(getattr(m, "__agentproto_other__", False) for m in members)
            return {"anyOf" if catch_all else "oneOf": [self.of(m) for m in members]}
        raise UsageError("schema.type", f"no JSON Schema for the annotation {tp!r}")

    def of_class(self, cls: type) -> dict[str, Any]:
        """A reference to the class's definition (made on first use), or it inline."""
        name = cls.__name__
        if self.inline:
            if cls in self.building:
                raise UsageError("schema.recursive", f"{name} refers to itself: not inlinable")
            self.building.add(cls)
            try:
                return self.object_schema(cls)
            finally:
                self.building.discard(cls)
        if name not in self.defs:
            self.defs[name] = {}  # claimed first: a class may refer to itself
            self.defs[name] = self.object_schema(cls)
        return {"$ref": f"#/$defs/{name}"}

    def object_schema(self, cls: type) -> dict[str, Any]:
        """The object schema of one generated class."""
        hints = typing.get_type_hints(cls, vars(self.namespace))
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            meta = field.metadata
            if meta.get("extra") or "wire" not in meta:
                continue  # the members an open class keeps verbatim
            properties[meta["wire"]] = self.field_schema(hints[field.name], meta)
            if meta.get("required"):
                required.append(meta["wire"])
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        if getattr(cls, "__agentproto_closed__", False):
            schema["additionalProperties"] = False
        return schema

    def field_schema(self, tp: Any, meta: typing.Mapping[str, Any]) -> dict[str, Any]:
        """One property: its type's schema, its constraints, and ``null`` if allowed."""
        schema = self.of(tp)
        schema.update({key: meta[key] for key in _CONSTRAINTS if key in meta})
        if "item" in meta and schema.get("type") == "array":
            items = dict(schema["items"])
            items.update({k: v for k, v in meta["item"].items() if k in _CONSTRAINTS})
            schema["items"] = items
        if meta.get("not_null"):
            schema["not"] = {"type": "null"}
        if meta.get("nullable") or meta.get("patch"):
            schema = {"anyOf": [schema, {"type": "null"}]}
        return schema


def _enum(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    if all(isinstance(v, str) for v in values):
        schema = {"type": "string", **schema}
    return schema


def json_schema(
    tp: Any, namespace: types.ModuleType = _generated, *, inline: bool = False
) -> dict[str, Any]:
    """The JSON Schema (2020-12) of a generated class or union, from its metadata.

    Args:
        tp: the generated class (or annotation) the schema is for.
        namespace: the generated module its annotations are resolved in.
        inline: every nested class written in place, with no ``$defs`` and no
            ``$schema`` (what a schema inside an OpenAPI document needs, whose
            ``$ref``s would resolve against the document); else the classes are
            ``$defs`` named after their classes and the root refers to them.

    Raises:
        UsageError: an annotation has no JSON Schema, or ``inline`` meets a class
            that refers to itself.
    """
    builder = _Builder(namespace, inline=inline)
    root = builder.of(tp)
    if inline:
        return root
    return {"$schema": JSON_SCHEMA_DIALECT, **root, "$defs": builder.defs}


@functools.cache
def _run_input_schema(inline: bool) -> dict[str, Any]:
    return json_schema(_generated.RunAgentInput, inline=inline)


def run_input_schema(*, inline: bool = False) -> dict[str, Any]:
    """The JSON Schema of a ``RunAgentInput`` request body, derived from the
    generated classes (computed once; each call returns a fresh copy to keep).

    Every message role, content part and source is there, with its required
    members, constants and enumerations; objects are closed
    (``additionalProperties: false``) as in the published definition.

    Args:
        inline: no ``$defs`` (see :func:`json_schema`): for an OpenAPI document.

    Returns:
        The schema as a JSON-ready dict, e.g. for ``jsonschema`` or an OpenAPI
        ``requestBody``.
    """
    return copy.deepcopy(_run_input_schema(inline))
