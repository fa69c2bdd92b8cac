"""What the agent sends, judged against the pinned ACP v2 schema with ``jsonschema``.

Independent of agentproto's own decoder on purpose: the schema file is the pinned one
(``acp/v2/schema.unstable.json`` through ``tests.needs``), read as JSON and checked by
the ``jsonschema`` package. A method's params and result definitions are found by the
schema's own ``x-method`` annotations.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]

from tests.needs import find_spec

SCHEMA_FILE = "acp/v2/schema.unstable.json"
V1_SCHEMA_FILE = "acp/v1/schema.unstable.json"


class SchemaMissing(LookupError):
    """The pinned schema cannot be had (no mirror, no cache, no network)."""


def _load(prefix: str) -> dict[str, Any]:
    root = find_spec(prefix)
    if root is None:
        raise SchemaMissing(f"the pinned {prefix} cannot be had")
    data: dict[str, Any] = json.loads((Path(root) / prefix).read_text(encoding="utf-8"))
    return data


@functools.cache
def schema() -> dict[str, Any]:
    """The pinned v2 schema."""
    return _load(SCHEMA_FILE)


def defs() -> dict[str, Any]:
    """Its ``$defs``."""
    result: dict[str, Any] = schema()["$defs"]
    return result


@functools.cache
def _validator(name: str | None) -> jsonschema.protocols.Validator:
    whole = schema()
    target = whole if name is None else {"$defs": whole["$defs"], "$ref": f"#/$defs/{name}"}
    cls = jsonschema.validators.validator_for(whole, default=jsonschema.Draft202012Validator)
    validator: jsonschema.protocols.Validator = cls(target)
    return validator


def invalid(value: Any, name: str | None = None) -> str | None:
    """Why ``value`` does not validate against ``$defs/name`` (the whole schema when
    ``None``), or ``None`` when it does."""
    error = jsonschema.exceptions.best_match(_validator(name).iter_errors(value))
    if error is None:
        return None
    where = "/" + "/".join(str(part) for part in error.absolute_path)
    return f"{name or 'message'}{where}: {error.message[:200]}"


@functools.cache
def method_defs() -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """Per method (``x-method``): the names of its params definitions and its result ones."""
    found: dict[str, tuple[list[str], list[str]]] = {}
    for name, definition in defs().items():
        method = definition.get("x-method") if isinstance(definition, dict) else None
        if method is None:
            continue
        params, results = found.setdefault(method, ([], []))
        (results if name.endswith("Response") else params).append(name)
    return {method: (tuple(p), tuple(r)) for method, (p, r) in found.items()}


def invalid_any(value: Any, names: tuple[str, ...]) -> str | None:
    """``None`` if ``value`` validates against one of ``names``, else the first reason."""
    reasons = [invalid(value, name) for name in names]
    return None if not reasons or None in reasons else reasons[0]


def envelope_problem(message: Any) -> str | None:
    """What makes ``message`` no JSON-RPC 2.0 message object, or ``None``."""
    if not isinstance(message, dict):
        return f"not an object: {json.dumps(message)[:80]}"
    if message.get("jsonrpc") != "2.0":
        return "jsonrpc is not '2.0'"
    if "method" in message:
        return None if isinstance(message["method"], str) else "method is not a string"
    if "id" not in message:
        return "neither a request, a notification nor a response"
    if ("result" in message) == ("error" in message):
        return "a response carries exactly one of result and error"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            return "error is not an object"
        if not isinstance(error.get("code"), int) or isinstance(error.get("code"), bool):
            return "error.code is not an integer"
        if not isinstance(error.get("message"), str):
            return "error.message is not a string"
    return None


def message_problem(message: Any, answered_method: str | None = None) -> str | None:
    """Why an agent message breaks the envelope or the pinned schema, or ``None``.

    ``answered_method``: for a response, the method of the request it answers (its
    result is checked against that method's result definitions).
    """
    problem = envelope_problem(message)
    if problem is not None:
        return problem
    problem = invalid(message)
    if problem is not None:
        return problem
    if "method" in message:
        method = message["method"]
        params_defs = method_defs().get(method, ((), ()))[0]
        if params_defs and "params" in message:
            return invalid_any(message["params"], params_defs)
        return None
    if "error" in message:
        return invalid(message["error"], "Error")
    if answered_method is not None:
        result_defs = method_defs().get(answered_method, ((), ()))[1]
        if result_defs:
            return invalid_any(message["result"], result_defs)
    return None


def unknown_root_keys(value: Any, names: tuple[str, ...]) -> list[str]:
    """Keys of ``value`` none of the object definitions ``names`` declares (``_meta``
    aside); definitions that are unions (``anyOf``) are not judged."""
    if not isinstance(value, dict) or not names:
        return []
    declared: set[str] = set()
    for name in names:
        definition = defs()[name]
        if "properties" not in definition or "anyOf" in definition:
            return []
        declared.update(definition["properties"])
    return sorted(key for key in value if key not in declared and key != "_meta")


@functools.cache
def v1_stop_reasons() -> tuple[str, ...]:
    """The stop reasons the pinned v1 schema enumerates (v2's pinned schema types
    ``stopReason`` as a plain string and documents the same constants in prose)."""
    found: list[str] = []
    for branch in _load(V1_SCHEMA_FILE)["$defs"]["StopReason"].get("oneOf", []) or _load(
        V1_SCHEMA_FILE
    )["$defs"]["StopReason"].get("anyOf", []):
        if "const" in branch:
            found.append(branch["const"])
    return tuple(found)
