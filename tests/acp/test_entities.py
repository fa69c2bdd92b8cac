"""Entity descriptions: what a regeneration changes reaches every rule, or fails loudly."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import Any, Literal

import attrs
import pytest

from agentproto import UsageError
from agentproto._core.unset import UNSET
from agentproto.acp import SessionState, ToolCallState, combine, resync_update, schema
from agentproto.acp._state import entities as _entities
from agentproto.acp._state import session as _session
from agentproto.acp._state import store as _store
from agentproto.acp._state.entities import BY_UPSERT, KINDS, EntityKind, kind_of, union_members
from agentproto.acp._state.rules import TOLERATED, build_rules, upsert_rule


def extended(cls: type, **added: attrs.Attribute[Any]) -> type:
    """``cls`` as a regeneration that adds fields (before ``_meta``) would make it."""
    fields: dict[str, Any] = {}
    for field in attrs.fields(cls):
        if field.name == "meta":
            fields.update(added)
        fields[field.name] = attrs.field(
            default=field.default, metadata=dict(field.metadata), type=field.type
        )
    made: type = attrs.make_class(cls.__name__, fields, kw_only=True)
    return made


def progress_field() -> Any:
    return attrs.field(
        default=UNSET,
        type="int | None | Unset",
        metadata={"nullable": True, "patch": True, "required": False, "wire": "progress"},
    )


@pytest.fixture
def regenerated(monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """The runtime as a regeneration adding a ``progress`` patch field to tool_call_update
    leaves it: the description re-derived, nothing else edited."""
    cls = extended(schema.ToolCallUpdateSessionUpdate, progress=progress_field())
    members = {**union_members(schema.SessionUpdate), "tool_call_update": cls}
    kind = EntityKind(KINDS["tool_call"].spec, members)
    monkeypatch.setitem(KINDS, "tool_call", kind)
    monkeypatch.setitem(BY_UPSERT, cls, kind)
    monkeypatch.setitem(_entities._BY_STATE, ToolCallState, kind)
    monkeypatch.setitem(_session.RULES, cls, upsert_rule(kind))
    yield cls


def test_a_field_the_record_does_not_declare_is_kept_dumped_combined_and_resynced(
    regenerated: Any,
) -> None:
    """A patch field the schema added since the record was written lives in other_fields."""
    cls = regenerated
    state = SessionState()
    state.apply(cls(tool_call_id="c1", title="T", progress=3))
    call = state.tool_calls["c1"]
    assert call.other_fields == {"progress": 3}
    assert state.to_json()["entities"]["tool_call:c1"] == {
        "toolCallId": "c1",
        "title": "T",
        "kind": "other",
        "status": "pending",
        "progress": 3,
    }
    state.apply(cls(tool_call_id="c1", status="completed"))
    assert call.other_fields == {"progress": 3}
    (merged,) = combine(cls(tool_call_id="c1", progress=1), cls(tool_call_id="c1", title="x"))
    assert (merged.progress, merged.title) == (1, "x")
    (merged,) = combine(cls(tool_call_id="c1", progress=1), cls(tool_call_id="c1", progress=None))
    assert merged.progress is None
    (resent,) = resync_update(None, call)
    assert resent.__class__ is cls and resent.progress == 3
    client = SessionState()
    client.apply(cls(tool_call_id="c1", progress=9, name="stale"))
    client.apply(resent)
    assert client.tool_calls["c1"] == call
    state.apply(cls(tool_call_id="c1", progress=None))
    assert call.other_fields == {}
    assert "progress" not in state.to_json()["entities"]["tool_call:c1"]
    (resent,) = resync_update(None, call)
    assert resent.progress is None  # resent as a clear


@attrs.define(kw_only=True)
class ProgressSessionUpdate:
    """A member a regeneration added to the union, without a rule in the runtime."""

    session_update: Literal["_progress"] = attrs.field(
        default="_progress",
        metadata={"required": True, "wire": "sessionUpdate", "const": "_progress"},
    )
    percent: int = attrs.field(metadata={"required": True, "wire": "percent"})
    extra: dict[str, Any] | None = attrs.field(default=None, metadata={"extra": True})


def test_a_union_member_without_a_rule_is_kept_with_a_diagnostic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A member class the runtime has no rule for is tolerated like an unknown kind."""
    union = schema.SessionUpdate | ProgressSessionUpdate
    rules = build_rules(union)
    assert set(rules) == set(typing.get_args(union))
    assert rules[ProgressSessionUpdate] in TOLERATED
    monkeypatch.setattr(_session, "RULES", rules)
    state = SessionState()
    state.apply(ProgressSessionUpdate(percent=5))  # type: ignore[arg-type]
    (kept,) = state.unknown
    assert (kept.session_update, kept.extra) == ("_progress", {"percent": 5})
    (diagnostic,) = state.diagnostics
    assert (diagnostic.code, diagnostic.subject) == ("unknown-session-update", "_progress")
    assert state.to_json() == {
        "entities": {},
        "unknown": [{"sessionUpdate": "_progress", "percent": 5}],
    }


def test_dispatch_covers_every_member_of_the_generated_union() -> None:
    """Every member has a rule; only the catch-all takes the tolerated path; the fast path
    holds every other kind."""
    members = typing.get_args(schema.SessionUpdate)
    assert set(_session.RULES) == set(members)
    tolerated = [cls for cls in members if _session.RULES[cls] in TOLERATED]
    assert tolerated == [schema.OtherSessionUpdate]
    assert set(_store._FAST_PATH) == set(union_members(schema.SessionUpdate))


def test_a_bug_in_a_rule_is_not_reported_as_bad_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """apply lets a rule's own TypeError through instead of calling it a UsageError."""

    def broken(state: SessionState, update: Any) -> None:
        raise TypeError("a bug")

    monkeypatch.setitem(_session.RULES, schema.ToolCallUpdateSessionUpdate, broken)
    with pytest.raises(TypeError, match="a bug"):
        SessionState().apply(schema.ToolCallUpdateSessionUpdate(tool_call_id="c1"))


def test_derived_facts_of_the_descriptions() -> None:
    """Ids, fixed fields, collections and clear defaults come from the generated classes."""
    compaction = KINDS["compaction"]
    assert (compaction.id_field, compaction.fixed) == ("compaction_id", (("status", "status"),))
    assert (compaction.collection, compaction.item_field) == ("summary", "content")
    assert KINDS["session_info"].id_field is None
    tool_call = {field.name: field for field in KINDS["tool_call"].patch}
    assert (tool_call["kind"].reset, tool_call["status"].reset) == ("other", "pending")
    assert tool_call["raw_input"].wire == "rawInput"
    directories = {field.name: field for field in KINDS["subagent"].patch}["additional_directories"]
    assert directories.is_list and directories.reset is None
    assert kind_of(
        SessionState().apply_tool_call(schema.ToolCallUpdate(tool_call_id="c"))
    ).name == ("tool_call")


def test_a_description_the_generated_code_no_longer_matches_fails_loudly() -> None:
    """A vanished upsert, chunk or id field raises a UsageError naming the file to edit."""
    members = union_members(schema.SessionUpdate)
    spec = KINDS["compaction"].spec
    for missing in ("compaction_update", "compaction_summary_chunk"):
        partial = {tag: cls for tag, cls in members.items() if tag != missing}
        with pytest.raises(UsageError, match=r"acp/_state/entities\.py") as caught:
            EntityKind(spec, partial)
        assert caught.value.code == "acp.stale-description"
        assert missing in str(caught.value)
    without_id = {
        name: attrs.field(default=f.default, metadata=dict(f.metadata), type=f.type)
        for name, f in attrs.fields_dict(schema.ToolCallUpdateSessionUpdate).items()
        if name != "tool_call_id"
    }
    cls = attrs.make_class("ToolCallUpdateSessionUpdate", without_id, kw_only=True)
    with pytest.raises(UsageError, match=r"acp/_state/entities\.py"):
        EntityKind(KINDS["tool_call"].spec, {**members, "tool_call_update": cls})


def test_hand_built_updates_with_a_wrong_id_or_fixed_field_are_usage_errors() -> None:
    """Ids, a compaction's status, terminal output and plans are checked before any change."""
    state = SessionState()
    with pytest.raises(UsageError):
        state.apply(schema.AgentMessageChunkSessionUpdate(message_id=1, content=None))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply(schema.CompactionUpdateSessionUpdate(compaction_id="k", status=None))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply(schema.TerminalUpdateSessionUpdate(terminal_id="t", output="YQ=="))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply_tool_call({"toolCallId": "c"})  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply(schema.PlanUpdateSessionUpdate(plan={"planId": "p"}))  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply(schema.PlanRemovedSessionUpdate(plan_id=3))  # type: ignore[arg-type]
    assert state == SessionState()


def test_a_kind_the_schema_lacks_is_absent_not_an_error() -> None:
    """An older ACP without subagent_update has no subagent kind (its table stays empty);
    a union with only half of a kind (the upsert without its chunk) fails loudly."""
    members = union_members(schema.SessionUpdate)
    older = {tag: cls for tag, cls in members.items() if tag != "subagent_update"}
    kinds = _entities.build_kinds(older)
    assert "subagent" not in kinds and "tool_call" in kinds
    assert "subagent" in _entities.ENTITY_NAMES
    assert SessionState().subagents == {}
    half = {tag: cls for tag, cls in members.items() if tag != "tool_call_content_chunk"}
    with pytest.raises(UsageError, match="tool_call_content_chunk"):
        _entities.build_kinds(half)
