"""Normalise a published schema into the plain shape the class generator handles.

Theory of operation. datamodel-code-generator turns ``$defs`` into classes well
as long as every object has a name and unions are lists of ``$ref``s. Published
schemas are richer than that, so this module rewrites a schema (after its
overlay is applied) into that plain shape, keeping every rule the runtime needs
as data:

* ``allOf`` mixins (AG-UI ``BaseEvent``, ``Attributable``, ``BaseMessage``) are
  flattened into each object: own properties first, then inherited ones.
* Anonymous union members get names from a rule: the member's tag value in
  PascalCase followed by the union's name (``{"type": "text", allOf: [TextContent]}``
  in ``ContentBlock`` becomes ``TextContentBlock``); a catch-all member (titled
  ``other``) becomes ``Other<Union>``; a titled member becomes ``<Title><Union>``.
  The ``[names]`` table of the source's overlay (the names file) maps a member's
  location to a name where the rule gives none or a taken one. A member still
  without a name, a taken name, or a names entry that names no anonymous member
  stops generation with a message naming the file and the exact line to add.
* Everything the class generator would lose (constraints such as ``minimum`` or a
  pattern on a string alias, "not null", the three-state patch marker the
  overlay sets, ACP's ``x-deserialize-*`` rules, the Python and wire names) moves into
  one ``x-ap`` object per property, which the template writes into the field's
  ``metadata``. Class-level facts (anchor, closed or open, catch-all member, enum
  of known values) go to ``class_info``, handed to the template as extra data.
* Upstream prose (``description``, ``examples``, ``title``) is dropped.
"""

from __future__ import annotations

import copy
import json
import keyword
import re
from collections.abc import Iterable
from typing import Any

JSON = Any

PATCH_KEY = "x-agentproto-patch"
_PROSE = ("description", "examples", "$comment", "title", "default", "format", "contentEncoding")
_CONSTRAINTS = ("minimum", "maximum", "minItems", "minLength", "pattern")


class NormalizeError(Exception):
    """The schema has a shape the normaliser cannot name or represent."""


def pascal(text: str) -> str:
    """``tool_call_update`` → ``ToolCallUpdate``; ``tool-call`` → ``ToolCall``."""
    parts = re.split(r"[^0-9A-Za-z]+", text)
    out = "".join(p[:1].upper() + p[1:] for p in parts if p)
    if not out or not out[0].isalpha():
        raise NormalizeError(f"cannot make a class name from {text!r}")
    return out


def snake(wire: str) -> str:
    """Python name of a wire property: camelCase → snake_case, ``_meta`` → ``meta``."""
    name = wire.lstrip("_")
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    name = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", name)
    name = re.sub(r"[^0-9A-Za-z_]", "_", name).lower()
    if not name or name[0].isdigit():
        name = "f_" + name
    if keyword.iskeyword(name) or name in {"type_", "self"}:
        name += "_"
    return name


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{name}"}


def _ref_name(schema: JSON) -> str | None:
    if isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref: str = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise NormalizeError(f"unsupported $ref {ref!r}")
        return ref[len("#/$defs/") :]
    return None


def _facts(prop: JSON) -> dict[str, Any]:
    """Move the facts the generator would lose out of ``prop`` into its ``x-ap`` dict.

    The patch marker, ACP's ``x-deserialize-*`` rules, constraints and "not null"
    leave the property schema; prose and other extension keys are dropped.
    """
    ap: dict[str, Any] = {}
    if prop.pop(PATCH_KEY, False):
        ap["patch"] = True
    if prop.pop("x-deserialize-default-on-error", False):
        ap["on_error"] = "default"
    if prop.pop("x-deserialize-skip-invalid-items", False):
        ap["skip_invalid_items"] = True
    prop.pop("x-deserialize-default-on-null", None)
    for key in _CONSTRAINTS:
        if key in prop:
            ap[key] = prop.pop(key)
    if prop.get("not") == {"type": "null"}:
        prop.pop("not")
        ap["not_null"] = True
    for key in list(prop):
        if key in _PROSE or (key.startswith("x-") and key != "x-ap"):
            prop.pop(key)
    return ap


class Normalizer:
    """Rewrites one schema; see the module docstring."""

    def __init__(
        self, schema: JSON, *, anchor_base: str, names: dict[str, str], names_file: str
    ) -> None:
        self.src: dict[str, JSON] = schema["$defs"]
        self.anchor_base = anchor_base
        self.names = names
        self.names_file = names_file
        self.names_used: set[str] = set()
        self.used_names: set[str] = set()
        self.out: dict[str, JSON] = {}
        self.info: dict[str, dict[str, Any]] = {}
        self._flat_cache: dict[str, tuple[dict[str, JSON], list[str], bool]] = {}
        self.errors: list[str] = []

    # ---- helpers -------------------------------------------------------------------------

    @staticmethod
    def _unwrap(schema: JSON) -> JSON:
        """``{"allOf": [{"$ref": X}], ...prose}`` → ``{"$ref": X, ...rest}``."""
        if not isinstance(schema, dict):
            return schema
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and _ref_name(all_of[0]):
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            if not ({"properties", "type", "$ref", "anyOf", "oneOf"} & rest.keys()):
                return {**rest, "$ref": all_of[0]["$ref"]}
        return schema

    def _member_pointer(self, where: str) -> str:
        union, _, index = where.rpartition("/")
        key = "oneOf" if "oneOf" in self.src.get(union, {}) else "anyOf"
        return f"#/$defs/{union}/{key}/{index}"

    def _name_problem(self, where: str, problem: str) -> None:
        self.errors.append(
            f"{self.names_file}: {self._member_pointer(where)}: {problem}; add this line "
            f'under [names] in the names file: "{where}" = "<Name>"'
        )

    def _unsupported(self, where: str, problem: str) -> None:
        self.errors.append(f"{where}: {problem}; codegen/normalize.py does not handle this shape")

    def _claim(self, name: str, where: str) -> str:
        if where in self.names:
            self.names_used.add(where)
            name = self.names[where]
        if name in self.used_names or (name in self.src and name not in self.absorbed):
            self._name_problem(where, f"the class name {name!r} is taken")
            name = f"{name}_{len(self.errors)}"
        self.used_names.add(name)
        return name

    def _flatten(self, def_name: str) -> tuple[dict[str, JSON], list[str], bool]:
        """Properties, required names and closedness of an object definition."""
        if def_name not in self._flat_cache:
            self._flat_cache[def_name] = self._flatten_schema(self.src[def_name], def_name)
        props, required, closed = self._flat_cache[def_name]
        return dict(props), list(required), closed

    def _flatten_schema(self, schema: JSON, where: str) -> tuple[dict[str, JSON], list[str], bool]:
        own: dict[str, JSON] = dict(schema.get("properties", {}))
        required: list[str] = list(schema.get("required", []))
        closed = (
            schema.get("unevaluatedProperties") is False
            or schema.get("additionalProperties") is False
        )
        inherited: dict[str, JSON] = {}
        for part in schema.get("allOf", []):
            name = _ref_name(part)
            if name is None:
                self._unsupported(where, "allOf member without $ref")
                continue
            props, req, _ = self._flatten(name)
            for key, value in props.items():
                inherited.setdefault(key, value)
            required += [r for r in req if r not in required]
        merged = dict(own)
        for key, value in inherited.items():
            if key not in merged:
                merged[key] = value
            else:
                # the own schema narrows the inherited one (e.g. `type` to a const)
                merged[key] = {**value, **merged[key]} if "$ref" not in merged[key] else merged[key]
                if "const" in merged[key]:
                    merged[key].pop("$ref", None)
        return merged, required, closed

    # ---- definitions ---------------------------------------------------------------------

    def run(self) -> tuple[dict[str, JSON], dict[str, dict[str, Any]]]:
        """Normalise every definition; returns (``$defs``, class info)."""
        self.used_names.update(self.src)
        text = json.dumps(self.src)
        self.ref_counts = {name: text.count(f'"#/$defs/{name}"') for name in self.src}
        self.absorbed: set[str] = set()
        # unions first (hoisting may absorb an object definition), in schema order so
        # that the output never depends on hash order
        unions = [n for n, s in self.src.items() if "anyOf" in s or "oneOf" in s]
        for name in [*unions, *(n for n in self.src if n not in set(unions))]:
            if name not in self.absorbed:
                self._definition(name, self.src[name])
        for where in sorted(set(self.names) - self.names_used):
            self.errors.append(
                f'{self.names_file}: [names] "{where}": names no anonymous union member '
                f"({self._member_pointer(where)})"
            )
        if self.errors:
            raise NormalizeError("\n".join(self.errors))
        return self.out, self.info

    def _definition(self, name: str, schema: JSON) -> None:
        schema = self._unwrap(schema)
        union = schema.get("oneOf") or schema.get("anyOf")
        if union is not None:
            self._union(name, schema, union)
        elif _ref_name(schema):
            self.out[name] = {"$ref": schema["$ref"]}
        elif schema.get("type") == "object" or "properties" in schema or "allOf" in schema:
            if "properties" not in schema and "allOf" not in schema:
                pass  # a free-form object: inlined as dict[str, Any] where it is used
            else:
                props, required, closed = self._flatten(name)
                self._object(name, props, required, closed=closed, anchor=name)
                if isinstance(schema.get("x-method"), str):
                    # the JSON-RPC method whose params (or result) this is: lets the
                    # runtime pick a request's params class by its `method`
                    self.info[name]["method"] = schema["x-method"]
                    # who handles the method: agent, client, protocol or proxy
                    self.info[name]["side"] = schema.get("x-side")
        elif "enum" in schema or "const" in schema:
            values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
            self.out[name] = {"type": schema.get("type", "string"), "enum": values}
            self.info[name] = {"enum": values, "open": False}
        elif "type" in schema:
            self.out[name] = self._plain(schema, name)
        else:
            self.out[name] = {}  # any JSON value

    def _plain(self, schema: JSON, where: str) -> JSON:
        kept = {k: v for k, v in schema.items() if k not in _PROSE and k not in _CONSTRAINTS}
        kept = {k: v for k, v in kept.items() if not k.startswith("x-")}
        if "items" in kept:
            kept["items"] = self._property(kept["items"], f"{where}Item", None)[0]
        return kept

    def _object(
        self,
        name: str,
        props: dict[str, JSON],
        required: list[str],
        *,
        closed: bool,
        anchor: str,
        other: bool = False,
    ) -> None:
        properties: dict[str, JSON] = {}
        python_names: set[str] = set()
        # required members first, in the schema's `required` order, then the optional
        # ones (own before inherited): the order producers usually write them in
        ordered = [r for r in required if r in props] + [k for k in props if k not in required]
        for wire in ordered:
            prop = props[wire]
            schema, ap = self._property(prop, name + pascal(wire), wire)
            ap["wire"] = wire
            ap["required"] = wire in required
            ap["name"] = snake(wire)
            runtime = {k: ap[k] for k in sorted(ap) if k != "name"}
            if "const" in schema:
                runtime["const"] = schema["const"]
            ap["metadata"] = repr(runtime)
            if ap["name"] in python_names:
                self._unsupported(f"{name}.{wire}", f"python name {ap['name']!r} taken twice")
                continue
            python_names.add(ap["name"])
            schema["x-ap"] = ap
            properties[wire] = schema
        if not closed and "extra" in python_names:
            self._unsupported(name, "a property 'extra' clashes with the open-object field")
        missing = [r for r in required if r not in props]
        # a required property the schema does not describe (AG-UI `description` in
        # Context and Tool is described in prose only) is a required string
        for wire in missing:
            runtime = {"required": True, "wire": wire}
            properties[wire] = {
                "type": "string",
                "x-ap": {**runtime, "name": snake(wire), "metadata": repr(runtime)},
            }
        self.out[name] = {
            "type": "object",
            "properties": properties,
            "required": [r for r in required],
        }
        self.info[name] = {
            "anchor": f"{self.anchor_base}#{anchor}",
            "closed": closed,
            "other": other,
        }

    def _property(
        self, prop: JSON, hoist_name: str, wire: str | None
    ) -> tuple[JSON, dict[str, Any]]:
        """A property schema for the generator, and its ``x-ap`` facts."""
        prop = self._unwrap(copy.deepcopy(prop))
        ap = _facts(prop)
        target = _ref_name(prop)
        if target is not None:
            ref_schema = self.src[target]
            # constraints on a primitive alias (JsonPointer's pattern) apply at each use
            for key in _CONSTRAINTS:
                if key in ref_schema and key not in ap:
                    ap[key] = ref_schema[key]
            extra = {k: v for k, v in prop.items() if k != "$ref"}
            if extra:
                self._unsupported(hoist_name, f"$ref with siblings {sorted(extra)}")
            if self._free_form(ref_schema):
                prop = {"type": "object", "additionalProperties": True}
        nullable = False
        if isinstance(prop.get("type"), list):
            types = [t for t in prop["type"] if t != "null"]
            nullable = len(types) != len(prop["type"])
            prop["type"] = types[0] if len(types) == 1 else types
        for key in ("anyOf", "oneOf"):
            if key in prop:
                members = list(self._flat_members(prop.pop(key)))
                non_null = [m for m in members if m != {"type": "null"}]
                nullable = nullable or len(non_null) != len(members)
                cleaned = [self._member_schema(m, hoist_name) for m in non_null]
                if len(cleaned) == 1:
                    prop.update(cleaned[0])
                else:
                    prop["anyOf"] = cleaned
        if nullable:
            ap["nullable"] = True
        if "items" in prop:
            prop["items"], item_ap = self._property(prop["items"], hoist_name + "Item", None)
            prop["items"].pop("x-ap", None)
            for key in _CONSTRAINTS:
                if key in item_ap:
                    ap.setdefault("item", {})[key] = item_ap[key]
        if "properties" in prop:
            self._unsupported(hoist_name, "inline object property")
            prop = {"type": "object", "additionalProperties": True}
        if prop.get("type") == "object" and "additionalProperties" in prop:
            prop = {"type": "object", "additionalProperties": True}
        if "const" in prop:
            prop = {"const": prop["const"], "type": prop.get("type", "string")}
        return prop, ap

    def _flat_members(self, members: Iterable[JSON]) -> Iterable[JSON]:
        for member in members:
            member = self._unwrap(member)
            inner = member.get("anyOf") or member.get("oneOf")
            if inner is not None and not ({"properties", "type", "$ref"} & member.keys()):
                yield from self._flat_members(inner)
            else:
                yield member

    def _member_schema(self, member: JSON, where: str) -> JSON:
        target = _ref_name(member)
        if target is not None:
            if self._free_form(self.src[target]):
                return {"type": "object", "additionalProperties": True}
            return {"$ref": member["$ref"]}
        if "properties" in member:
            self._unsupported(where, "inline object in a property union")
            return {"type": "object", "additionalProperties": True}
        return self._plain(member, where)

    # ---- unions --------------------------------------------------------------------------

    def _union(self, name: str, schema: JSON, members_raw: list[JSON]) -> None:
        members = [self._unwrap(m) for m in self._flat_members(members_raw)]
        # an enumeration written as a union of consts, maybe with an open catch-all
        if all(("const" in m or "enum" in m) or self._is_open_scalar(m) for m in members) and any(
            "const" in m or "enum" in m for m in members
        ):
            values: list[Any] = []
            for m in members:
                values += [m["const"]] if "const" in m else list(m.get("enum", []))
            open_ = any(self._is_open_scalar(m) for m in members)
            json_type = next(m.get("type") for m in members if "type" in m)
            self.out[name] = {"type": json_type} if open_ else {"type": json_type, "enum": values}
            self.info[name] = {"enum": values, "open": open_}
            return
        base_props, base_required, base_closed = (
            self._flatten_schema(
                {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}, name
            )
            if "properties" in schema
            else ({}, [], False)
        )
        refs: list[JSON] = []
        for index, member in enumerate(members):
            where = f"{name}/{index}"
            if _ref_name(member) and not base_props:
                refs.append({"$ref": member["$ref"]})
            elif member == {"type": "null"}:
                refs.append(member)
            elif "properties" in member or _ref_name(member) or "allOf" in member:
                refs.append(
                    _ref(self._hoist(name, where, member, base_props, base_required, base_closed))
                )
            elif "type" in member or not (member.keys() - set(_PROSE)):
                refs.append(self._plain(member, where))
            else:
                self._unsupported(where, "union member of unknown shape")
        self.out[name] = {"anyOf": refs}

    @staticmethod
    def _free_form(schema: JSON) -> bool:
        """An object definition with no declared members (``Metadata``): plain JSON."""
        return (
            isinstance(schema, dict)
            and schema.get("type") == "object"
            and not ({"properties", "allOf", "anyOf", "oneOf"} & schema.keys())
        )

    @staticmethod
    def _is_open_scalar(member: JSON) -> bool:
        return (
            isinstance(member, dict)
            and member.get("type") in ("string", "integer")
            and "const" not in member
            and "enum" not in member
            and "properties" not in member
        )

    def _hoist(
        self,
        union: str,
        where: str,
        member: JSON,
        base_props: dict[str, JSON],
        base_required: list[str],
        base_closed: bool,
    ) -> str:
        props, required, closed = self._flatten_schema(member, where)
        tag_values = [
            (key, p["const"]) for key, p in member.get("properties", {}).items() if "const" in p
        ]
        is_other = member.get("title") == "other" or ("not" in member and not tag_values)
        if is_other:
            name = self._claim(f"Other{union}", where)
        elif tag_values:
            name = pascal(str(tag_values[0][1])) + union
            wrapped = [_ref_name(part) for part in member.get("allOf", [])]
            if wrapped == [name] and self.ref_counts.get(name) == 1:
                # the member wraps the one definition named like it: that definition
                # becomes the member (with the tag), instead of a second class
                self.absorbed.add(name)
                self.used_names.discard(name)
            name = self._claim(name, where)
        elif member.get("title"):
            name = self._claim(pascal(member["title"]) + union, where)
        elif where in self.names:
            name = self._claim(self.names[where], where)
        else:
            self._name_problem(where, "union member without a tag or title")
            name = self._claim(f"Unnamed{union}{len(self.errors)}", where)
        for key, value in base_props.items():
            props.setdefault(key, value)
        required += [r for r in base_required if r not in required]
        open_object = member.get("additionalProperties") is True
        self._object(
            name,
            props,
            required,
            closed=(closed or base_closed) and not open_object,
            anchor=f"{union}/anyOf/{where.rsplit('/', 1)[1]}",
            other=is_other,
        )
        return name


def normalize(
    schema: JSON,
    *,
    anchor_base: str,
    names: dict[str, str] | None = None,
    names_file: str = "the overlay names file",
) -> tuple[JSON, dict[str, dict[str, Any]]]:
    """Normalise ``schema``; returns (schema for the generator, class info).

    Raises:
        NormalizeError: every naming problem at once, one per line, each naming
            ``names_file`` and the line to add to it.
    """
    normalizer = Normalizer(
        schema, anchor_base=anchor_base, names=names or {}, names_file=names_file
    )
    defs, info = normalizer.run()
    # The generator always makes a model of the root schema; pointed at a definition
    # and named after it (its --class-name), it adds no stray `Model` alias.
    root = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
    root["$ref"] = f"#/$defs/{next(iter(defs))}"
    return {**root, "$defs": defs}, info
