"""The JSON-RPC method table and the error codes of an ACP schema, as generated data.

Theory of operation. An ACP schema marks each definition that is a method's params
or result with ``x-method`` (the JSON-RPC method) and ``x-side`` (who handles it:
``agent``, ``client``, ``protocol`` or ``proxy``). Whether a definition is a
request's params, a request's result or a notification's params is not marked on it;
the schema says it through its JSON-RPC envelopes instead: an object with ``id``,
``method`` and ``params`` is a request, one with ``method`` and ``params`` but no
``id`` a notification, one with ``id`` and ``result`` a response. Every definition an
envelope's ``params`` or ``result`` refers to gets that role. A method is then one
entry per (method, kind), kind ``request`` or ``notification``, holding its side,
its params and result definition names and whether the *stable* schema has the same
(method, kind) too.

A definition with ``x-method`` that no envelope refers to, or that two envelopes
give different roles, two definitions for one role of one method, and a side
missing or disagreeing between a request's params and result, are problems: all
are reported at once, and generation stops.

Error codes: the schema's ``ErrorCode`` is a union of titled integer constants (and
an untitled catch-all for other codes). Each constant's name is its title in upper
snake case (``Method not found`` → ``METHOD_NOT_FOUND``); a constant without a
title, or two titles giving one name, is a problem.

Capability markers: in v2 the agent's capabilities (the ``capabilities`` of the
``initialize`` result) are object markers, and the schema says in prose which methods
a marker advertises: the first sentence of a marker's description that opens with
*Whether the agent supports* or *Supplying `{}` means the agent supports* names them in
backticks (``session``: the baseline session methods; ``session.delete``:
``session/delete``). Each marker whose sentence names methods the agent handles gets
an entry: its wire path → those methods. Markers that advertise features rather than
methods (prompt content types, MCP transports) name none and get no entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

JSON = Any
Key = tuple[str, str]
"""(method, kind) of one method table entry."""

ERROR_CODE_DEF = "ErrorCode"
ERROR_CODE_CLASS = "KnownErrorCode"
"""The name of the generated enumeration of the codes ``ErrorCode`` names."""
_ROLES = ("request", "notification", "result")
_ADVERTISES = re.compile(r"^(Whether the agent supports|Supplying `\{\}` means the agent supports)")
_SENTENCE_END = re.compile(r"(?<=\.)\s+")
_CODE = re.compile(r"`([^`]+)`")


def _refs(node: JSON) -> Iterator[str]:
    """The ``$defs`` names ``node`` refers to, not following the references."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            yield ref[len("#/$defs/") :]
        for key, value in node.items():
            if key != "properties":
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _nodes(node: JSON) -> Iterator[dict[str, Any]]:
    """Every object of a schema document, the root included."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)


def envelope_roles(schema: JSON) -> dict[str, set[str]]:
    """Which roles (``request``, ``notification``, ``result``) each definition plays.

    Read off the JSON-RPC envelopes of the schema (see the module docstring).
    """
    roles: dict[str, set[str]] = {}
    for node in _nodes(schema):
        props = node.get("properties")
        if not isinstance(props, dict):
            continue
        if "result" in props and "id" in props:
            role, inner = "result", props["result"]
        elif "params" in props and "method" in props:
            role, inner = ("request" if "id" in props else "notification"), props["params"]
        else:
            continue
        for name in _refs(inner):
            roles.setdefault(name, set()).add(role)
    return roles


def method_entries(schema: JSON, where: str) -> tuple[dict[Key, dict[str, Any]], list[str]]:
    """The method table of ``schema``: entries by (method, kind), and every problem.

    Args:
        schema: the schema document.
        where: how problems name the schema (its file).

    Returns:
        Entries ``{"side", "params", "result"}`` (definition names or ``None``) by
        (method, kind), and the problems, one line each.
    """
    defs: dict[str, JSON] = schema.get("$defs", {})
    roles = envelope_roles(schema)
    entries: dict[Key, dict[str, Any]] = {}
    problems: list[str] = []
    for name, definition in defs.items():
        if not isinstance(definition, dict) or "x-method" not in definition:
            continue
        method, side = definition["x-method"], definition.get("x-side")
        pointer = f"{where}#/$defs/{name}"
        if not isinstance(method, str):
            problems.append(f"{pointer}: x-method {method!r} is not a string")
            continue
        found = roles.get(name, set())
        if len(found) != 1:
            shown = " and ".join(sorted(found)) or "no JSON-RPC envelope"
            problems.append(f"{pointer}: x-method {method!r} is used as {shown}; want one role")
            continue
        (role,) = found
        kind = "request" if role == "result" else role
        entry = entries.setdefault((method, kind), {"side": side, "params": None, "result": None})
        slot = "result" if role == "result" else "params"
        if entry[slot] is not None:
            problems.append(f"{pointer}: {method!r} already has {slot} {entry[slot]!r}")
        entry[slot] = name
        if not isinstance(side, str) or entry["side"] != side:
            problems.append(f"{pointer}: x-side {side!r} disagrees or is missing for {method!r}")
    return entries, problems


def error_codes(schema: JSON, where: str) -> tuple[dict[str, int], list[str]]:
    """The named error codes of ``schema``'s ``ErrorCode`` (empty without one), and problems."""
    definition = schema.get("$defs", {}).get(ERROR_CODE_DEF)
    if not isinstance(definition, dict):
        return {}, []
    union = "anyOf" if "anyOf" in definition else "oneOf"
    members = definition.get(union) or []
    codes: dict[str, int] = {}
    problems: list[str] = []
    for index, member in enumerate(members):
        if not isinstance(member, dict) or not isinstance(member.get("const"), int):
            continue  # the catch-all for other codes
        pointer = f"{where}#/$defs/{ERROR_CODE_DEF}/{union}/{index}"
        name = re.sub(r"[^0-9A-Za-z]+", "_", str(member.get("title", ""))).strip("_").upper()
        if not name or name[0].isdigit():
            problems.append(f"{pointer}: error code {member['const']} has no usable title")
        elif name in codes:
            problems.append(f"{pointer}: two error codes are named {name}")
        else:
            codes[name] = member["const"]
    return codes, problems


def methods_text(
    entries: dict[Key, dict[str, Any]], stable: set[Key] | None, stable_name: str | None
) -> str:
    """The ``METHODS`` table appended to a sealed module (a plain literal).

    Args:
        entries: the method table of the generated schema.
        stable: the (method, kind) pairs of its stable schema; ``None`` when the
            source names no stable schema (then ``stable`` is ``None``: not known).
        stable_name: the stable source's name, for the comment.
    """
    told = f"whether {stable_name} has it too" if stable_name else "None: no stable schema pinned"
    lines = [
        "",
        "",
        "# (method, kind) -> side, params and result names, stable: " + told,
        "METHODS: dict[tuple[str, str], dict[str, Any]] = {",
    ]
    for key in sorted(entries):
        entry = dict(entries[key], stable=None if stable is None else key in stable)
        lines.append(f"    {key!r}: {entry!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


def error_codes_text(codes: dict[str, int], anchor: str) -> str:
    """The enumeration of the named error codes appended to a sealed module."""
    if not codes:
        return ""
    lines = ["", "", f"class {ERROR_CODE_CLASS}(enum.IntEnum):", f'    """{anchor}"""', ""]
    lines += [f"    {name} = {value}" for name, value in codes.items()]
    return "\n".join(lines) + "\n"


def _marker_ref(prop: JSON) -> str | None:
    """The definition a capability property refers to (``anyOf``/``allOf`` of a ``$ref``)."""
    for name in _refs(prop):
        return name
    return None


def _advertised(description: str, methods: set[str]) -> tuple[str, ...]:
    """The methods the first advertising sentence of ``description`` names (see above)."""
    for sentence in _SENTENCE_END.split(description):
        if _ADVERTISES.match(sentence.strip()):
            return tuple(sorted({m for m in _CODE.findall(sentence) if m in methods}))
    return ()


def capability_entries(
    schema: JSON, entries: dict[Key, dict[str, Any]]
) -> dict[tuple[str, ...], tuple[str, ...]]:
    """The agent's capability markers that advertise methods: wire path → the methods.

    The markers are read from the ``capabilities`` property of the ``initialize``
    result and below; a schema without one has none.
    """
    defs: dict[str, JSON] = schema.get("$defs", {})
    agent_methods = {method for (method, _), e in entries.items() if e["side"] == "agent"}
    result = entries.get(("initialize", "request"), {}).get("result")
    root = defs.get(result or "", {}).get("properties", {}).get("capabilities")
    found: dict[tuple[str, ...], tuple[str, ...]] = {}
    if not isinstance(root, dict):
        return found
    todo: list[tuple[tuple[str, ...], str | None]] = [((), _marker_ref(root))]
    seen: set[str] = set()
    while todo:
        path, name = todo.pop()
        if name is None or name in seen or not isinstance(defs.get(name), dict):
            continue
        seen.add(name)
        for wire, prop in (defs[name].get("properties") or {}).items():
            target = _marker_ref(prop) if isinstance(prop, dict) else None
            if target is None:
                continue  # not a marker (_meta, or a plain value)
            methods = _advertised(str(prop.get("description", "")), agent_methods)
            if methods:
                found[(*path, wire)] = methods
            todo.append(((*path, wire), target))
    return found


def capabilities_text(found: dict[tuple[str, ...], tuple[str, ...]]) -> str:
    """The ``CAPABILITIES`` table appended to a sealed module (a plain literal)."""
    lines = [
        "",
        "",
        "# capability marker (wire path in the initialize result's capabilities) -> the",
        "# methods its description says it advertises",
        "CAPABILITIES: dict[tuple[str, ...], tuple[str, ...]] = {",
    ]
    lines += [f"    {path!r}: {found[path]!r}," for path in sorted(found)]
    lines.append("}")
    return "\n".join(lines) + "\n"
