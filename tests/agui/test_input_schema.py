"""The run input's JSON Schema, derived from the generated classes (issue 10: "the run
input's JSON Schema available for OpenAPI"), held to the published fixtures and to the
published definitions read from the spec mirror."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentproto import AgentProtoError
from agentproto.agui import parse_run_input, run_input_schema
from tests.needs import spec_dir, spec_params

WHERE = {"RunAgentInput": None, "UserMessage": "messages", "ToolMessage": "messages"}
WHERE |= {"Tool": "tools", "ResumeEntry": "resume"}
"""The fixture definitions a run input holds, and the member each goes in."""


def as_run_input(definition: str, document: Any) -> Any:
    """A fixture of ``definition`` placed where a run input holds one."""
    member = WHERE[definition]
    if member is None:
        return document
    return {"threadId": "t", "runId": "r", "messages": [], member: [document]}


def fixtures(folder: Path) -> list[Any]:
    """The published fixtures of what a run input holds, under ``folder``."""
    params = []
    for definition in WHERE:
        for path in sorted((folder / definition).glob("*/*.json")):
            if not path.name.endswith(".expect.json"):
                id_ = f"{definition}/{path.parent.name}/{path.stem}"
                params.append(pytest.param(definition, path, id=id_))
    return params


FIXTURES = spec_params(
    lambda root: fixtures(root / "agui/draft/fixtures"), "agui/draft/fixtures", width=2
)


@functools.cache
def validator(inline: bool) -> jsonschema.Draft202012Validator:
    schema = run_input_schema(inline=inline)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("inline", [False, True], ids=["defs", "inline"])
@pytest.mark.parametrize(("definition", "path"), FIXTURES)
def test_the_schema_judges_each_fixture_as_filed(definition: str, path: Path, inline: bool) -> None:
    """A ``valid/`` fixture validates; an ``invalid/`` one does not, and one error is at
    the instance location its ``.expect.json`` names (under where it was placed)."""
    document = as_run_input(definition, json.loads(path.read_text(encoding="utf-8")))
    errors = list(validator(inline).iter_errors(document))
    if path.parent.name == "valid":
        assert errors == []
        return
    assert errors, "an invalid fixture validates"
    expect = json.loads(path.with_name(path.stem + ".expect.json").read_text(encoding="utf-8"))
    member = WHERE[definition]
    location = ("" if member is None else f"/{member}/0") + expect["instanceLocation"]
    assert location in set(locations(errors))


def locations(errors: list[jsonschema.ValidationError]) -> Iterator[str]:
    """The instance locations (JSON Pointers) of errors and of the errors under them."""
    for error in errors:
        yield "".join(f"/{part}" for part in error.absolute_path)
        yield from locations(list(error.context or ()))


@pytest.mark.parametrize(("definition", "path"), FIXTURES)
def test_the_schema_and_the_parser_agree(definition: str, path: Path) -> None:
    """What the schema accepts the SDK's strict parser accepts, and what it rejects the
    parser rejects: the documented body is the checked body."""
    document = as_run_input(definition, json.loads(path.read_text(encoding="utf-8")))
    valid = validator(False).is_valid(document)
    try:
        parse_run_input(document)
    except AgentProtoError:
        assert not valid
    else:
        assert valid


def published() -> dict[str, Any]:
    text = spec_dir("agui/draft/schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema["$defs"]


def shape(definitions: dict[str, Any], name: str) -> dict[str, Any]:
    """A published definition's members, required members, closedness and union
    members, its ``allOf`` mixins merged in."""
    definition = definitions[name]
    properties = dict(definition.get("properties", {}))
    required = set(definition.get("required", []))
    for mixin in definition.get("allOf", []):
        base = shape(definitions, mixin["$ref"].rsplit("/", 1)[-1])
        properties = {**base["properties"], **properties}
        required |= base["required"]
    members = [
        ref["$ref"].rsplit("/", 1)[-1] for ref in definition.get("oneOf", []) if "$ref" in ref
    ]
    return {
        "properties": properties,
        "required": required,
        "closed": definition.get("unevaluatedProperties") is False
        or definition.get("additionalProperties") is False,
        "members": members,
    }


def refs_in(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            yield value["$ref"].rsplit("/", 1)[-1]
        for item in value.values():
            yield from refs_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs_in(item)


def reachable(definitions: dict[str, Any], root: str) -> set[str]:
    seen: set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(refs_in(definitions[name]))
    return seen


def test_the_derived_definitions_match_the_published_ones() -> None:
    """Every object definition the published ``RunAgentInput`` reaches is derived under
    its own name, with the same members, the same required ones and the same
    closedness; every published union's members are the derived union's. (The
    ``allOf`` mixins are flattened into the classes that use them.)"""
    upstream = published()
    derived = run_input_schema()["$defs"]
    names = reachable(upstream, "RunAgentInput")
    mixins = {ref for name in names for ref in refs_in(upstream[name].get("allOf", []))}
    objects = set()
    for name in sorted(names - mixins):
        want = shape(upstream, name)
        if want["members"]:
            unions = [
                sorted(ref["$ref"].rsplit("/", 1)[-1] for ref in found["oneOf"])
                for found in _all_dicts(derived)
                if "oneOf" in found and all("$ref" in ref for ref in found["oneOf"])
            ]
            assert sorted(want["members"]) in unions, name
        elif want["properties"]:
            objects.add(name)
            got = derived[name]
            assert set(got["properties"]) == set(want["properties"]), name
            assert set(got.get("required", [])) == want["required"], name
            assert (got.get("additionalProperties") is False) == want["closed"], name
            for member, prop in want["properties"].items():
                expected = facts(upstream, prop)
                assert facts(derived, got["properties"][member]) == expected, (name, member)
    assert objects == set(derived), "derived definitions the published input does not reach"


FACTS = ("type", "const", "enum", "not", "minimum", "maximum", "pattern", "minItems")


def facts(definitions: dict[str, Any], prop: dict[str, Any]) -> dict[str, Any]:
    """What a property says of its value's kind (type, const, enum, not-null, bounds),
    through one ``$ref`` (the property's own keywords win)."""
    target = definitions.get(prop["$ref"].rsplit("/", 1)[-1], {}) if "$ref" in prop else {}
    merged = {**target, **prop}
    return {key: merged[key] for key in FACTS if key in merged}


def _all_dicts(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _all_dicts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _all_dicts(item)


def test_the_schema_is_a_fresh_copy_each_time() -> None:
    """Changing a returned schema changes no later one (the derivation is cached)."""
    first = run_input_schema()
    first["$defs"].clear()
    assert run_input_schema()["$defs"]
    assert run_input_schema(inline=True) == run_input_schema(inline=True)


def test_the_schema_carries_no_upstream_prose() -> None:
    """Names and constraints only: no ``description`` or ``title`` text is copied (a
    member *named* ``description`` is a property, not prose)."""
    for inline in (False, True):
        for found in _all_dicts(run_input_schema(inline=inline)):
            for key in ("description", "title", "$comment"):
                assert not isinstance(found.get(key), str), found[key]
