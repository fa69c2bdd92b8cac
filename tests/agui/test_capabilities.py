"""Capabilities: the draft's declaration rules (basic/capabilities.mdx), on fixtures and cases.

The spec mirror's fixture set has no ``AgentCapabilities`` documents (its fixtures
predate the group); tests/agui/test_fixtures.py runs any it gains. The hand-written
fixtures here (``fixtures/capabilities/<Definition>/{valid,invalid}``, the mirror's
layout and ``.expect.json`` format) cover the declaration and its parts.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest

from agentproto import DecodeError, SchemaError, UsageError
from agentproto.agui import (
    CAPABILITY_FLAGS,
    Capabilities,
    dump_capabilities,
    parse_capabilities,
    schema,
)
from tests.agui.test_fixtures import check
from tests.docblocks import run_doc_block
from tests.needs import find_spec

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "capabilities"
CAPABILITY_DEFINITIONS = {
    "AgentCapabilities",
    "IdentityCapabilities",
    "TransportCapabilities",
    "ToolsCapabilities",
    "OutputCapabilities",
    "StateCapabilities",
    "MultiAgentCapabilities",
    "SubagentInfo",
    "ReasoningCapabilities",
    "MultimodalCapabilities",
    "MultimodalInputCapabilities",
    "MultimodalOutputCapabilities",
    "ExecutionCapabilities",
    "HumanInTheLoopCapabilities",
}


def _cases(root: Path) -> list[tuple[str, str, Path]]:
    return [
        (path.parts[-3], path.parts[-2], path)
        for path in sorted(root.glob("*/*/*.json"))
        if not path.name.endswith(".expect.json")
    ]


OWN = _cases(FIXTURES)
SPEC = find_spec("agui/draft/fixtures")  # the mirror's capability fixtures, when it gains any
MIRRORED = _cases(SPEC / "agui/draft/fixtures") if SPEC is not None else []
MIRRORED_CAPABILITIES = [case for case in MIRRORED if case[0] in CAPABILITY_DEFINITIONS]


def _load(name: str) -> Any:
    return json.loads((FIXTURES / "AgentCapabilities" / "valid" / name).read_text())


def test_own_fixtures_are_found_for_both_kinds() -> None:
    """The hand-written fixture folders hold valid and invalid documents, each of a
    capability definition, and every invalid one has its expectation file."""
    assert {kind for _, kind, _ in OWN} == {"valid", "invalid"}
    assert {definition for definition, _, _ in OWN} <= CAPABILITY_DEFINITIONS
    assert len(OWN) >= 15
    for _, kind, path in OWN:
        if kind == "invalid":
            assert path.with_suffix("").with_suffix(".expect.json").is_file(), path


@pytest.mark.parametrize(
    ("definition", "kind", "path"),
    OWN + MIRRORED_CAPABILITIES,
    ids=[f"{d}/{k}/{p.stem}" for d, k, p in OWN + MIRRORED_CAPABILITIES],
)
def test_fixture(definition: str, kind: str, path: Path) -> None:
    """Each capability fixture (hand-written, or mirrored once the mirror has any)
    round-trips exactly, or is rejected in strict mode exactly as its expectation says."""
    problem = check(definition, kind, path)
    assert problem is None, problem


@pytest.mark.parametrize("name", ["every-group.json", "empty.json", "declared-false.json"])
def test_parse_and_dump_round_trip(name: str) -> None:
    """A valid declaration parses to the typed class and dumps back to the same JSON."""
    document = _load(name)
    found: list[Any] = []
    parsed = parse_capabilities(document, diagnostics=found)
    assert isinstance(parsed, schema.AgentCapabilities)
    assert found == []
    assert dump_capabilities(parsed) == document


def test_open_objects_are_kept_untouched() -> None:
    """``identity.metadata`` and ``custom`` keep every key and value (nulls included)."""
    parsed = parse_capabilities(_load("every-group.json"))
    assert parsed.identity is not None
    assert parsed.identity.metadata == {"acme:region": "eu", "acme:nested": {"k": None}}
    caps = Capabilities(parsed)
    assert caps.custom["rateLimit"]["maxRequestsPerMinute"] == 60
    assert caps.custom["flag"] is None
    with pytest.raises(TypeError):
        caps.custom["new"] = 1  # type: ignore[index]


def test_unknown_members_are_stripped_not_fatal() -> None:
    """A newer agent's group or field is stripped with a diagnostic naming its path;
    the declaration is still used (a consumer must not reject it for them)."""
    found: list[Any] = []
    parsed = parse_capabilities(
        {"reasoning": {"supported": True, "budget": 3}, "voice": {"duplex": True}},
        diagnostics=found,
    )
    assert parsed.reasoning == schema.ReasoningCapabilities(supported=True)
    assert [(d.code, d.path) for d in found] == [
        ("unknown-field", "/reasoning/budget"),
        ("unknown-field", "/voice"),
    ]


def test_unknown_members_are_logged_without_a_list(caplog: pytest.LogCaptureFixture) -> None:
    """Without a diagnostics list, what is stripped is logged at WARNING, never silent."""
    with caplog.at_level(logging.WARNING, logger="agentproto.agui"):
        parse_capabilities({"voice": {}})
    assert any("/voice" in record.getMessage() for record in caplog.records)


def test_malformed_declaration_lists_every_problem() -> None:
    """A known field with a value the schema rejects is fatal, with every problem listed
    at its wire location (stripped unknown members are not among them)."""
    with pytest.raises(SchemaError) as caught:
        parse_capabilities(
            {
                "reasoning": {"supported": "yes"},
                "execution": {"maxIterations": -1},
                "multiAgent": {"subagents": [{"description": "x"}]},
                "voice": {},
            }
        )
    got = {(p.keyword, p.location) for p in caught.value.problems}
    assert got == {
        ("type", "/reasoning/supported"),
        ("minimum", "/execution/maxIterations"),
        ("required", "/multiAgent/subagents/0"),
    }


def test_parse_refuses_what_is_not_json() -> None:
    """A value that is no JSON, or nests past the depth limit, is an SDK error."""
    with pytest.raises(SchemaError):
        parse_capabilities({"custom": {"when": object()}})
    deep: Any = {}
    for _ in range(600):
        deep = {"k": deep}
    with pytest.raises(DecodeError):
        parse_capabilities({"custom": deep})


def test_dump_holds_the_declaration_to_the_schema() -> None:
    """Exposing a declaration uses the schema's shape: a wrong value is refused with
    every problem, before anything is sent."""
    bad = schema.AgentCapabilities(
        reasoning=schema.ReasoningCapabilities(supported="yes"),  # type: ignore[arg-type]
        execution=schema.ExecutionCapabilities(max_iterations=-2),
    )
    with pytest.raises(SchemaError) as caught:
        dump_capabilities(bad)
    assert {p.location for p in caught.value.problems} == {
        "/reasoning/supported",
        "/execution/maxIterations",
    }


def test_omitted_means_undeclared_not_unsupported() -> None:
    """``supports`` answers True or False as declared, and None for what was not."""
    caps = Capabilities.read({"reasoning": {"supported": True, "encrypted": False}})
    assert caps.supports("reasoning.supported") is True
    assert caps.supports("reasoning.encrypted") is False
    assert caps.supports("reasoning.streaming") is None
    assert caps.supports("multimodal.input.image") is None
    assert Capabilities().supports("humanInTheLoop.interrupts") is None


def test_every_flag_comes_from_the_schema() -> None:
    """The flags are exactly the boolean fields of the generated groups, in wire names."""
    assert "multimodal.input.pdf" in CAPABILITY_FLAGS
    assert "humanInTheLoop.approveWithEdits" in CAPABILITY_FLAGS
    assert "execution.maxIterations" not in CAPABILITY_FLAGS  # an integer, not a flag
    assert "tools.items" not in CAPABILITY_FLAGS
    assert len(CAPABILITY_FLAGS) == 34
    full = Capabilities.read(_load("every-group.json"))
    assert all(full.supports(flag) is not None for flag in CAPABILITY_FLAGS)


def test_unknown_flag_is_a_usage_error() -> None:
    """Asking about a flag the schema does not have is the caller's mistake."""
    with pytest.raises(UsageError, match=re.escape("'reasoning.thinking'")) as caught:
        Capabilities().supports("reasoning.thinking")
    assert caught.value.code == "capabilities.unknown-flag"


def test_a_flag_without_its_prerequisite_means_nothing() -> None:
    """``approveWithEdits`` / ``sandboxed`` are only meaningful when ``interrupts`` /
    ``codeExecution`` are true: declared false there, the flag reads False and the
    declaration gets a ``capabilities.not-meaningful`` diagnostic."""
    found: list[Any] = []
    caps = Capabilities.read(
        {
            "humanInTheLoop": {"interrupts": False, "approveWithEdits": True},
            "execution": {"codeExecution": False, "sandboxed": True},
        },
        diagnostics=found,
    )
    assert caps.supports("humanInTheLoop.approveWithEdits") is False
    assert caps.supports("execution.sandboxed") is False
    assert [(d.code, d.path) for d in found] == [
        ("capabilities.not-meaningful", "/execution/sandboxed"),
        ("capabilities.not-meaningful", "/humanInTheLoop/approveWithEdits"),
    ]
    undeclared = Capabilities.read({"humanInTheLoop": {"approveWithEdits": True}}, diagnostics=[])
    assert undeclared.supports("humanInTheLoop.approveWithEdits") is True


def test_a_repeated_subagent_name_is_reported() -> None:
    """A subagent's name is its unique identifier: a repeated one gets a diagnostic."""
    found: list[Any] = []
    caps = Capabilities.read(
        {"multiAgent": {"subagents": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}},
        diagnostics=found,
    )
    assert [info.name for info in caps.subagents] == ["a", "b", "a"]
    assert [(d.code, d.path, d.subject) for d in found] == [
        ("capabilities.duplicate-subagent", "/multiAgent/subagents/2/name", "a")
    ]


@pytest.mark.parametrize(
    "document",
    [{"reasoning": {"supported": "yes"}}, ["not", "an", "object"], {"state": None}],
)
def test_a_rejected_declaration_reads_as_declaring_nothing(document: Any) -> None:
    """A declaration that cannot be validated is not used and never prevents a run:
    ``read`` gives an empty declaration and a ``capabilities.rejected`` diagnostic."""
    found: list[Any] = []
    caps = Capabilities.read(document, diagnostics=found)
    assert caps == Capabilities()
    assert caps.supports("reasoning.supported") is None
    assert [d.code for d in found] == ["capabilities.rejected"]


def test_an_absent_declaration_reads_as_declaring_nothing() -> None:
    """No declaration obtained (``None``) is an agent that declared nothing, silently."""
    found: list[Any] = []
    assert Capabilities.read(None, diagnostics=found) == Capabilities()
    assert found == []


def test_queries_over_lists() -> None:
    """Subagents and provided tools read as tuples (empty when undeclared)."""
    caps = Capabilities.read(_load("every-group.json"))
    assert [info.name for info in caps.subagents] == ["researcher", "writer"]
    assert [tool.name for tool in caps.provided_tools] == ["search"]
    assert Capabilities().subagents == () and Capabilities().provided_tools == ()
    assert dict(Capabilities().custom) == {}


def test_guide_example_runs() -> None:
    """The client authors' guide's capabilities example runs as written."""
    namespace = run_doc_block("docs/guides/client-authors.md", "Capabilities")
    caps = namespace["caps"]
    assert caps.supports("humanInTheLoop.interrupts") is True
    assert caps.supports("multimodal.input.pdf") is False
    assert caps.supports("reasoning.streaming") is None
    assert [d.path for d in namespace["found"]] == ["/voice"]
