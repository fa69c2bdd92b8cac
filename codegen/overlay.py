"""The overlay of a source: what its schema cannot say, checked against that schema.

An overlay is a TOML file bound to one source (``overlay = "overlays/<file>.toml"`` in
``schema/sources.toml``). Every table is optional:

* ``[patch]`` — ``<Definition> = ["<wire name>", ...]``: the ACP three-state patch
  fields (omitted = unchanged, ``null`` = clear, value = replace). A schema cannot tell
  such a field from a plain optional nullable one, so the overlay says it, and checks
  what the claim needs: the property exists, is optional and admits ``null``.
* ``[not_patch]`` — the same shape: nullable properties of update classes that are
  *not* patch fields ("omitted and ``null`` are equivalent"). Listing them explicitly
  makes a new upstream nullable field a loud problem instead of a silent guess.
* ``[update_classes]`` — ``union = "<Union>"`` and ``also = ["<Definition>", ...]``.
  An *update class* is an object definition that one member of that union wraps
  (``allOf: [{"$ref": ...}]`` or a plain ``$ref``; a wrapped union, such as a state
  snapshot, is not followed), or one listed in ``also``. Every optional property of
  an update class that admits ``null`` must be in ``[patch]`` or ``[not_patch]``.
* ``[names]`` — ``"<Union>/<index>" = "<ClassName>"``: names for anonymous union
  members where the naming rule gives none or a taken one (see ``normalize``).

Every problem is collected, never raised one by one: each is one line naming the
overlay file, the entry and the schema pointer, and never quotes upstream prose.
"""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen.normalize import PATCH_KEY
from codegen.sources import Source, shown

JSON = Any
TABLES = ("update_classes", "patch", "not_patch", "names")
_TABLE_LIST = ", ".join(f"[{t}]" for t in TABLES)


@dataclass
class Overlay:
    """The parsed overlay of one source (empty when the source has none)."""

    file: str
    """The overlay file as messages show it."""
    bound: bool = True
    """False when the source names no overlay (``file`` is then a suggestion)."""
    union: str | None = None
    also: list[str] = field(default_factory=list)
    patch: dict[str, list[str]] = field(default_factory=dict)
    not_patch: dict[str, list[str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)

    @property
    def names_file(self) -> str:
        """Where a names entry goes, as a message shows it."""
        if self.bound:
            return self.file
        return f"{self.file} (create it and bind it with overlay = ... in schema/sources.toml)"


def pointer(*tokens: str) -> str:
    """A JSON Pointer fragment into the schema: ``#/$defs/X/properties/y``."""
    escaped = (t.replace("~", "~0").replace("/", "~1") for t in tokens)
    return "#/" + "/".join(escaped)


def load_overlay(source: Source) -> tuple[Overlay, list[str]]:
    """The overlay of ``source`` and the problems of its file's structure."""
    if source.overlay is None:
        return Overlay(file=f"schema/overlays/{source.name}.toml", bound=False), []
    overlay = Overlay(file=shown(source.overlay))
    try:
        data = tomllib.loads(Path(source.overlay).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return overlay, [f"{overlay.file}: cannot read the overlay: {exc}"]
    problems: list[str] = []
    for key, value in data.items():
        if key not in TABLES:
            what = "unknown table" if isinstance(value, dict) else "entry outside any table"
            problems.append(f"{overlay.file}: {key!r}: {what}; the tables are {_TABLE_LIST}")
        elif not isinstance(value, dict):
            problems.append(f"{overlay.file}: {key!r}: must be a table, [{key}]")
    problems += _read_update_classes(overlay, data.get("update_classes", {}))
    for table in ("patch", "not_patch"):
        problems += _read_field_lists(overlay, table, data.get(table, {}))
    problems += _read_names(overlay, data.get("names", {}))
    return overlay, problems


def _read_update_classes(overlay: Overlay, table: Any) -> list[str]:
    if not isinstance(table, dict):
        return []
    problems = []
    for key, value in table.items():
        if key == "union" and isinstance(value, str):
            overlay.union = value
        elif key == "also" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            overlay.also = list(value)
        else:
            problems.append(
                f'{overlay.file}: [update_classes] {key!r}: expected union = "<Union>" '
                'or also = ["<Definition>", ...]'
            )
    return problems


def _read_field_lists(overlay: Overlay, table: str, entries: Any) -> list[str]:
    if not isinstance(entries, dict):
        return []
    problems = []
    target = overlay.patch if table == "patch" else overlay.not_patch
    for cls, wires in entries.items():
        if isinstance(wires, list) and all(isinstance(w, str) for w in wires):
            target[cls] = list(wires)
        else:
            problems.append(
                f'{overlay.file}: [{table}] {cls}: expected a list of wire names, {cls} = ["..."]'
            )
    return problems


def _read_names(overlay: Overlay, entries: Any) -> list[str]:
    if not isinstance(entries, dict):
        return []
    problems = []
    for where, name in entries.items():
        union, _, index = where.rpartition("/")
        if not (union and index.isdigit() and isinstance(name, str) and name.isidentifier()):
            problems.append(
                f'{overlay.file}: [names] {where!r}: expected the line "<Union>/<index>" = '
                '"<ClassName>", e.g. "ContentBlock/2" = "ImageContentBlock"'
            )
        else:
            overlay.names[where] = name
    return problems


# ---- checking against the schema ---------------------------------------------------------


def admits_null(schema: JSON, defs: dict[str, JSON], seen: frozenset[str] = frozenset()) -> bool:
    """Whether a property schema accepts JSON ``null`` (an unconstrained one does)."""
    if not isinstance(schema, dict):
        return schema is True
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/") :]
        return name not in seen and admits_null(defs.get(name, {}), defs, seen | {name})
    parts = schema.get("allOf", [])
    if parts and not all(admits_null(p, defs, seen) for p in parts):
        return False
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return any(admits_null(m, defs, seen) for m in schema[key])
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return None in schema["enum"]
    kind = schema.get("type")
    if isinstance(kind, list):
        return "null" in kind
    if isinstance(kind, str):
        return kind == "null"
    return "properties" not in schema


def _properties(defs: dict[str, JSON], name: str) -> dict[str, tuple[str, bool]]:
    """Wire name → (definition that declares it, required) of an object definition."""
    definition = defs[name]
    found: dict[str, tuple[str, bool]] = {}
    required = set(definition.get("required", []))
    for wire in definition.get("properties", {}):
        found[wire] = (name, wire in required)
    for part in definition.get("allOf", []):
        ref = part.get("$ref", "") if isinstance(part, dict) else ""
        if ref.startswith("#/$defs/") and ref[len("#/$defs/") :] in defs:
            for wire, (owner, req) in _properties(defs, ref[len("#/$defs/") :]).items():
                found.setdefault(wire, (owner, req or wire in required))
    return found


def update_classes(overlay: Overlay, defs: dict[str, JSON]) -> tuple[list[str], list[str]]:
    """The update classes the overlay defines over ``defs``, and problems finding them."""
    problems: list[str] = []
    found: list[str] = []
    if overlay.union is not None:
        union = defs.get(overlay.union, {})
        members = union.get("anyOf") or union.get("oneOf")
        if not members:
            problems.append(
                f"{overlay.file}: [update_classes] union = {overlay.union!r}: "
                f"{pointer('$defs', overlay.union)} is not a union definition"
            )
        for member in members or []:
            for part in [member, *member.get("allOf", [])]:
                name = str(part.get("$ref", "")).removeprefix("#/$defs/")
                if "properties" in defs.get(name, {}) and name not in found:
                    found.append(name)
    for index, name in enumerate(overlay.also):
        if name not in defs:
            problems.append(
                f"{overlay.file}: [update_classes] also[{index}] {name!r}: "
                f"{pointer('$defs', name)} does not exist"
            )
        elif name not in found:
            found.append(name)
    return found, problems


def _entries(overlay: Overlay, table: str) -> Iterator[tuple[str, int, str]]:
    lists = overlay.patch if table == "patch" else overlay.not_patch
    for cls, wires in lists.items():
        for index, wire in enumerate(wires):
            yield cls, index, wire


def _check_entry(
    overlay: Overlay, table: str, entry: tuple[str, int, str], defs: dict[str, JSON]
) -> str | None:
    """The problem with one ``[patch]``/``[not_patch]`` entry, if any."""
    cls, index, wire = entry
    where = f"{overlay.file}: [{table}] {cls}[{index}] {wire!r}"
    at = pointer("$defs", cls, "properties", wire)
    if cls not in defs:
        return f"{overlay.file}: [{table}] {cls}: {pointer('$defs', cls)} does not exist; drop it"
    props = _properties(defs, cls)
    if wire not in props:
        return f"{where}: {at} does not exist; drop the entry"
    owner, required = props[wire]
    at = pointer("$defs", owner, "properties", wire)
    if table == "not_patch":
        if wire in overlay.patch.get(cls, []):
            return f"{where}: {at} is also listed in [patch]"
        return None
    if required:
        return f"{where}: {at} is required; a patch field is optional"
    if not admits_null(defs[owner]["properties"][wire], defs):
        return f"{where}: {at} no longer admits null; a patch field must"
    return None


def check_overlay(overlay: Overlay, schema: JSON) -> list[str]:
    """Every problem of the overlay's claims against ``schema``, one line each."""
    defs: dict[str, JSON] = schema.get("$defs", {})
    problems: list[str] = []
    seen: set[tuple[str, str, str]] = set()
    for table in ("patch", "not_patch"):
        for cls, index, wire in _entries(overlay, table):
            if (table, cls, wire) in seen:
                problems.append(f"{overlay.file}: [{table}] {cls}[{index}] {wire!r}: listed twice")
                continue
            seen.add((table, cls, wire))
            problem = _check_entry(overlay, table, (cls, index, wire), defs)
            if problem is not None and problem not in problems:  # a missing class: once
                problems.append(problem)
    classes, found_problems = update_classes(overlay, defs)
    problems += found_problems
    for cls in classes:
        for wire, (owner, required) in _properties(defs, cls).items():
            classified = wire in overlay.patch.get(cls, []) + overlay.not_patch.get(cls, [])
            if required or classified:
                continue
            if admits_null(defs[owner]["properties"][wire], defs):
                problems.append(
                    f"{overlay.file}: {pointer('$defs', owner, 'properties', wire)}: "
                    f"nullable property of update class {cls} is unclassified; add "
                    f"{wire!r} to {cls} in [patch] or [not_patch]"
                )
    return problems


def mark_patch_fields(overlay: Overlay, schema: JSON) -> JSON:
    """A copy of ``schema`` whose patch properties carry the normaliser's patch marker."""
    marked = copy.deepcopy(schema)
    defs = marked.get("$defs", {})
    for cls, _, wire in _entries(overlay, "patch"):
        if cls in defs and wire in (props := _properties(defs, cls)):
            owner, _ = props[wire]
            defs[owner]["properties"][wire][PATCH_KEY] = True
    return marked
