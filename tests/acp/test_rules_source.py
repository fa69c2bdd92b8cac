"""Every ACP upsert rule is readable on disk: the sealed module holds it, the runtime checks it.

The code generator writes each derived upsert rule into ``_generated_rules_v2.py``; the
runtime takes its rules from there (compiling only those of classes a caller made,
registered with ``linecache``), refuses a sealed module whose code is not what the
entity descriptions give now, and prints any rule with ``rule_source``.
"""

from __future__ import annotations

import inspect
import traceback
from pathlib import Path
from typing import Any

import attrs
import pytest

from agentproto import UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import SessionState, ToolCallState, schema
from agentproto.acp._state import _generated_rules_v2 as sealed
from agentproto.acp._state import rules as rules_module
from agentproto.acp._state import session as session_module
from agentproto.acp._state.entities import KINDS, EntityKind, union_members
from agentproto.acp._state.session import rule_source
from agentproto.acp._state.upserts import upsert_classes, upsert_source
from tests.docblocks import run_doc_block

ROOT = Path(__file__).resolve().parents[2]
UPSERTS = upsert_classes(KINDS, schema)


def _traceback(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def test_every_upsert_rule_comes_from_the_sealed_module() -> None:
    """No upsert rule of a generated class is compiled at import: each is the sealed module's."""
    assert set(sealed.RULES) == set(UPSERTS)
    for cls in UPSERTS:
        rule = rules_module.tool_call_rule if cls is schema.ToolCallUpdate else None
        rule = rule or session_module.RULES[cls]
        assert rule is sealed.RULES[cls]
        assert rule.__module__ == sealed.__name__


def test_the_sealed_rules_are_what_the_descriptions_give() -> None:
    """Each sealed rule's code is the text the rule writer gives now, and so is its hash."""
    for cls, kind in UPSERTS.items():
        source = upsert_source(kind, cls)
        assert inspect.getsource(sealed.RULES[cls]) == source.text
        assert sealed.SOURCE_SHA256[cls] == source.sha256


def test_a_stale_sealed_rule_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sealed rule whose code differs from what the descriptions give refuses to load."""
    monkeypatch.setitem(sealed.SOURCE_SHA256, schema.ToolCallUpdateSessionUpdate, "0" * 64)
    with pytest.raises(ImportError, match=r"ToolCallUpdateSessionUpdate.*python -m codegen"):
        rules_module.sealed_rules()


def test_a_sealed_rule_no_description_asks_for_fails_loudly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A sealed rule of a class the descriptions no longer have refuses to load too."""
    monkeypatch.setitem(sealed.SOURCE_SHA256, schema.PlanUpdateSessionUpdate, "0" * 64)
    with pytest.raises(ImportError, match="PlanUpdateSessionUpdate"):
        rules_module.sealed_rules()


def test_a_failing_sealed_rule_shows_its_line_in_the_traceback() -> None:
    """A traceback through a sealed rule names the sealed module and shows the failing line."""
    update = schema.ToolCallUpdateSessionUpdate(tool_call_id=5)  # type: ignore[arg-type]
    with pytest.raises(UsageError) as caught:
        SessionState().apply(update)
    text = _traceback(caught.value)
    assert "_generated_rules_v2.py" in text
    assert "in _apply_ToolCallUpdateSessionUpdate" in text
    assert "raise bad('/toolCallId', 'a string', ident)" in text


def _with_progress() -> type:
    """``ToolCallUpdateSessionUpdate`` as a regeneration adding a patch field would make it."""
    fields: dict[str, Any] = {}
    for field in attrs.fields(schema.ToolCallUpdateSessionUpdate):
        if field.name == "meta":
            fields["progress"] = attrs.field(
                default=UNSET,
                type="int | None | Unset",
                metadata={"nullable": True, "patch": True, "required": False, "wire": "progress"},
            )
        fields[field.name] = attrs.field(
            default=field.default, metadata=dict(field.metadata), type=field.type
        )
    made: type = attrs.make_class("ToolCallUpdateSessionUpdate", fields, kw_only=True)
    return made


def test_a_rule_compiled_for_a_callers_class_shows_its_lines() -> None:
    """The rule of a class no sealed module holds is compiled, and its traceback shows the line."""
    cls = _with_progress()
    members = {**union_members(schema.SessionUpdate), "tool_call_update": cls}
    kind = EntityKind(KINDS["tool_call"].spec, members)
    rule = rules_module.upsert_rule(kind)
    assert rule.__module__ != sealed.__name__
    with pytest.raises(UsageError) as caught:
        rule(SessionState(), cls(tool_call_id=None))
    text = _traceback(caught.value)
    assert f'File "<agentproto rule {cls.__module__}.ToolCallUpdateSessionUpdate' in text
    assert "raise bad('/toolCallId', 'a string', ident)" in text
    assert inspect.getsource(rule) == upsert_source(kind).text
    assert "entity.other_fields['progress'] = v" in inspect.getsource(rule)


def test_rule_source_prints_every_rule() -> None:
    """rule_source prints the sealed text of a derived rule and the definition of any other."""
    for cls in UPSERTS:
        assert rule_source(cls) == inspect.getsource(sealed.RULES[cls])
    assert rule_source(schema.PlanUpdateSessionUpdate).startswith("def _apply_plan(")
    assert "def rule(" in rule_source(schema.ToolCallContentChunkSessionUpdate)
    with pytest.raises(UsageError, match="no rule folds a ToolCallState"):
        rule_source(ToolCallState)


def test_the_maintainers_guide_prints_a_loader_and_a_rule(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The maintainers' section of the docs prints a sealed loader and a sealed rule."""
    run_doc_block("docs/guides/maintainers.md", "Maintainers: regenerate from the schemas")
    printed = capsys.readouterr().out
    assert "def _load_ToolCallUpdateSessionUpdate(" in printed
    assert rule_source(schema.ToolCallUpdateSessionUpdate) in printed
