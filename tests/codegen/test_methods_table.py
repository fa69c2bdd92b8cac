"""The generator's METHODS table and error codes: read from x-method/x-side and the envelopes."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path
from typing import Any

import pytest

from codegen.generate import GenerationError, Tables, _check_table_names, schema_tables
from codegen.methods import (
    capabilities_text,
    capability_entries,
    error_codes,
    error_codes_text,
    method_entries,
    methods_text,
)
from codegen.sources import ROOT, SourceError, load_sources, read_source
from tests.codegen.evolution import defs, pinned_schema, regenerate

SOURCES, TARGETS = load_sources()
ACP = "acp-v2-unstable"


def _envelope(*, request: list[str], notification: list[str], result: list[str]) -> Any:
    """A tiny ACP-like schema: request, notification and response envelopes over $refs."""

    def refs(names: list[str]) -> dict[str, Any]:
        return {"anyOf": [{"title": n, "allOf": [{"$ref": f"#/$defs/{n}"}]} for n in names]}

    return {
        "$defs": {
            "OutRequest": {
                "type": "object",
                "properties": {"id": {}, "method": {}, "params": refs(request)},
            },
            "OutNotification": {
                "type": "object",
                "properties": {"method": {}, "params": refs(notification)},
            },
            "InResponse": {
                "anyOf": [{"type": "object", "properties": {"id": {}, "result": refs(result)}}]
            },
        }
    }


def _schema(**defs_: Any) -> Any:
    schema = _envelope(request=["FooRequest"], notification=["PingNote"], result=["FooResponse"])
    schema["$defs"].update(
        FooRequest={"type": "object", "x-method": "foo", "x-side": "agent"},
        FooResponse={"type": "object", "x-method": "foo", "x-side": "agent"},
        PingNote={"type": "object", "x-method": "ping", "x-side": "client"},
    )
    schema["$defs"].update(defs_)
    return schema


def test_roles_come_from_the_envelopes_not_the_names() -> None:
    """A definition's kind is the envelope that refers to it (``PingNote`` is a notification
    though its name says nothing), paired with its result by method."""
    entries, problems = method_entries(_schema(), "s.json")
    assert problems == []
    assert entries == {
        ("foo", "request"): {"side": "agent", "params": "FooRequest", "result": "FooResponse"},
        ("ping", "notification"): {"side": "client", "params": "PingNote", "result": None},
    }


@pytest.mark.parametrize(
    "edit, expected",
    [
        ({"Stray": {"x-method": "stray", "x-side": "agent"}}, "Stray: x-method 'stray' is used as"),
        (
            {"FooResponse": {"x-method": "foo", "x-side": "client"}},
            "FooResponse: x-side 'client' disagrees",
        ),
        ({"PingNote": {"x-method": "ping"}}, "PingNote: x-side None"),
        ({"PingNote": {"x-method": 3, "x-side": "client"}}, "PingNote: x-method 3 is not"),
    ],
)
def test_method_problems_name_the_definition(edit: dict[str, Any], expected: str) -> None:
    """A definition no envelope uses, with a missing or disagreeing side or a method that is
    no string, is a problem naming the schema file and the definition."""
    _, problems = method_entries(_schema(**edit), "s.json")
    assert any(p.startswith("s.json#/$defs/") and expected in p for p in problems), problems


def test_two_definitions_for_one_role_is_a_problem() -> None:
    """Two params definitions for one (method, kind) cannot both be the params."""
    schema = _envelope(request=["A", "B"], notification=[], result=[])
    schema["$defs"].update(
        A={"x-method": "m", "x-side": "agent"}, B={"x-method": "m", "x-side": "agent"}
    )
    _, problems = method_entries(schema, "s.json")
    assert problems == ["s.json#/$defs/B: 'm' already has params 'A'"]


def test_a_definition_in_two_roles_is_a_problem() -> None:
    """A definition used both as a request's params and as a notification's is refused."""
    schema = _envelope(request=["A"], notification=["A"], result=[])
    schema["$defs"]["A"] = {"x-method": "m", "x-side": "agent"}
    _, problems = method_entries(schema, "s.json")
    assert problems and "notification and request" in problems[0]


def test_methods_text_is_a_plain_literal_with_stable_marks() -> None:
    """The emitted table is a Python literal: entries plus stable marks from the stable set."""
    entries, _ = method_entries(_schema(), "s.json")
    text = methods_text(entries, {("foo", "request")}, "stable-src")
    literal = ast.literal_eval(text.split("= ", 1)[1])
    assert literal[("foo", "request")]["stable"] is True
    assert literal[("ping", "notification")]["stable"] is False
    unknown = ast.literal_eval(methods_text(entries, None, None).split("= ", 1)[1])
    assert {entry["stable"] for entry in unknown.values()} == {None}


def _codes(*members: dict[str, Any]) -> Any:
    return {"$defs": {"ErrorCode": {"anyOf": list(members)}}}


def test_error_codes_are_named_by_their_titles() -> None:
    """Each titled constant is named by its title; the untitled catch-all is skipped."""
    schema = _codes(
        {"title": "Parse error", "const": -32700},
        {"title": "Resource not found", "const": -32002},
        {"title": "Other", "type": "integer"},
    )
    codes, problems = error_codes(schema, "s.json")
    assert (codes, problems) == ({"PARSE_ERROR": -32700, "RESOURCE_NOT_FOUND": -32002}, [])
    text = error_codes_text(codes, "s.json#ErrorCode")
    assert "class KnownErrorCode(enum.IntEnum):" in text and "PARSE_ERROR = -32700" in text
    assert error_codes({"$defs": {}}, "s.json") == ({}, [])
    assert error_codes_text({}, "x") == ""


def test_untitled_or_clashing_error_codes_are_problems() -> None:
    """A constant without a usable title, or two titles giving one name, stop generation."""
    schema = _codes({"const": -1}, {"title": "A b", "const": -2}, {"title": "a-B", "const": -3})
    _, problems = error_codes(schema, "s.json")
    assert problems == [
        "s.json#/$defs/ErrorCode/anyOf/0: error code -1 has no usable title",
        "s.json#/$defs/ErrorCode/anyOf/2: two error codes are named A_B",
    ]


def test_table_names_must_be_generated() -> None:
    """A table naming a type the module lacks, or a definition taking the enum's name, fails."""
    source = SOURCES[ACP]
    with pytest.raises(GenerationError, match="'Missing'"):
        _check_table_names(source, Tables("", frozenset({"Missing"})), {"Other"})
    with pytest.raises(GenerationError, match="KnownErrorCode"):
        _check_table_names(source, Tables("", frozenset()), {"KnownErrorCode"})


def test_acp_sources_name_their_stable_counterpart() -> None:
    """Both ACP targets are generated from unstable schemas that name a pinned stable one."""
    for target in ("acp_v2", "acp_v1"):
        source = SOURCES[TARGETS[target].source]
        assert source.stable is not None and source.stable.mirror.endswith("/schema.json")
    assert schema_tables(SOURCES["agui-draft"]) == (Tables("", frozenset()), [])


def test_a_stable_naming_no_source_is_refused(tmp_path: Path) -> None:
    """``stable = "<source>"`` must name another source of sources.toml."""
    path = tmp_path / "sources.toml"
    (tmp_path / "overlays").mkdir()
    path.write_text(
        '[a]\nprotocol = "acp"\nversion = "1"\nmirror = "a.json"\nurl = "https://x"\n'
        'sha256 = "0"\nstable = "nope"\n',
        encoding="utf-8",
    )
    with pytest.raises(SourceError, match="stable = 'nope': no such source"):
        load_sources(path)


@pytest.mark.parametrize("target", ["acp_v2", "acp_v1"])
def test_sealed_table_is_the_pinned_schemas(target: str) -> None:
    """The sealed module's METHODS is what the generator reads from the pinned schema."""
    source = SOURCES[TARGETS[target].source]
    entries, problems = method_entries(json.loads(read_source(source)), "x")
    assert problems == []
    text = (ROOT / TARGETS[target].module).read_text(encoding="utf-8")
    literal = text.split("\nMETHODS: dict[tuple[str, str], dict[str, Any]] = ", 1)[1]
    sealed = ast.literal_eval(literal.split("\n}\n", 1)[0] + "\n}")
    assert {k: {n: v for n, v in e.items() if n != "stable"} for k, e in sealed.items()} == entries


def _marker(description: str, ref: str) -> dict[str, Any]:
    return {"description": description, "anyOf": [{"$ref": f"#/$defs/{ref}"}, {"type": "null"}]}


def test_capability_markers_name_the_methods_their_description_advertises() -> None:
    """A marker's first sentence saying what the agent supports names its methods (agent
    methods only); a sentence saying what a marker does *not* advertise, a later sentence,
    a feature marker and a boolean are ignored; markers nest by wire path."""
    entries = {
        ("initialize", "request"): {"side": "agent", "params": "Init", "result": "InitResult"},
        ("s/new", "request"): {"side": "agent", "params": None, "result": None},
        ("s/drop", "request"): {"side": "agent", "params": None, "result": None},
        ("s/list", "request"): {"side": "agent", "params": None, "result": None},
        ("s/update", "notification"): {"side": "client", "params": None, "result": None},
        ("a/login", "request"): {"side": "agent", "params": None, "result": None},
    }
    schema = {
        "$defs": {
            "InitResult": {"properties": {"capabilities": {"allOf": [{"$ref": "#/$defs/Caps"}]}}},
            "Caps": {
                "properties": {
                    "s": _marker(
                        "Omitted means no `s/*` methods. Supplying `{}` means the agent "
                        "supports `s/new`, `s/list` and `s/update`.",
                        "SCaps",
                    ),
                    "a": _marker("This does not advertise support for `a/login`.", "ACaps"),
                    "flag": {
                        "type": "boolean",
                        "description": "Whether the agent supports `s/new`.",
                    },
                    "_meta": {"type": "object"},
                }
            },
            "SCaps": {
                "properties": {
                    "drop": _marker(
                        "Whether the agent supports `s/drop`.\n\nSupplying `{}` means the agent "
                        "supports dropping sessions from `s/list`.",
                        "Marker",
                    ),
                    "image": _marker("Agent supports `image` content.", "Marker"),
                }
            },
            "ACaps": {"properties": {}},
            "Marker": {"properties": {"_meta": {"type": "object"}}},
        }
    }
    found = capability_entries(schema, entries)
    assert found == {("s",): ("s/list", "s/new"), ("s", "drop"): ("s/drop",)}
    table = capabilities_text(found).split(" = ", 1)[1]
    assert ast.literal_eval(table) == found
    assert capability_entries({"$defs": {}}, {}) == {}


@pytest.mark.parametrize("target", ["acp_v2", "acp_v1"])
def test_sealed_capabilities_are_the_pinned_schemas(target: str) -> None:
    """The sealed module's CAPABILITIES is what the generator reads from the pinned schema."""
    source = SOURCES[TARGETS[target].source]
    schema = json.loads(read_source(source))
    entries, _ = method_entries(schema, "x")
    text = (ROOT / TARGETS[target].module).read_text(encoding="utf-8")
    literal = text.split("\nCAPABILITIES: dict[tuple[str, ...], tuple[str, ...]] = ", 1)[1]
    sealed = ast.literal_eval(literal.split("\n}\n", 1)[0] + "\n}")
    assert sealed == capability_entries(schema, entries)


# ---- evolution: a new method upstream -----------------------------------------------------


def _add_method(schema: dict[str, Any]) -> dict[str, Any]:
    """A new agent request ``session/rename`` (params and result) in the ClientRequest and
    AgentResponse envelopes, and a definition with x-method that no envelope uses."""
    d = defs(schema)
    d["RenameSessionRequest"] = copy.deepcopy(d["SetSessionTitleRequest"])
    d["RenameSessionRequest"]["x-method"] = "session/rename"
    d["RenameSessionResponse"] = copy.deepcopy(d["SetSessionTitleResponse"])
    d["RenameSessionResponse"]["x-method"] = "session/rename"
    params = d["ClientRequest"]["properties"]["params"]["anyOf"][0]["anyOf"]
    params.append({"allOf": [{"$ref": "#/$defs/RenameSessionRequest"}]})
    results = d["AgentResponse"]["anyOf"][0]["properties"]["result"]["anyOf"]
    results.append({"allOf": [{"$ref": "#/$defs/RenameSessionResponse"}]})
    return schema


def test_a_new_method_upstream_needs_no_hand_edit(tmp_path: Path) -> None:
    """A method added upstream reaches METHODS (unstable: the stable schema lacks it)."""
    regen = regenerate(ACP, _add_method(pinned_schema(ACP)), tmp_path)
    text = regen.expect_module().read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("    ('session/rename',"))
    entry = ast.literal_eval("{" + line.strip().rstrip(",") + "}")[("session/rename", "request")]
    assert entry == {
        "side": "agent",
        "params": "RenameSessionRequest",
        "result": "RenameSessionResponse",
        "stable": False,
    }


def test_a_method_no_envelope_uses_stops_generation(tmp_path: Path) -> None:
    """A definition with x-method that no JSON-RPC envelope uses fails generation, naming it."""
    schema = pinned_schema(ACP)
    defs(schema)["StraySessionRequest"] = {
        "type": "object",
        "properties": {"sessionId": {"type": "string"}},
        "x-method": "session/stray",
        "x-side": "agent",
    }
    message = regenerate(ACP, schema, tmp_path).expect_failure()
    assert "#/$defs/StraySessionRequest: x-method 'session/stray'" in message
