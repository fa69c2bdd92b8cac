"""v1 ↔ v2 adapters: tool calls, whole-object ``_meta`` turned into patches, and the lossy modes."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from agentproto import UsageError
from agentproto.acp import (
    SessionState,
    V1ToV2Adapter,
    V2ToV1Adapter,
    dump_session_update,
    make_v1_converter,
    parse_session_update,
    schema_v1,
)
from agentproto.acp._relay.versions import DEFAULT_PLAN_ID, WHOLE_META_V1
from tests.acp.acp_updates import tool_update as tool

V1 = make_v1_converter()


def v1(obj: dict[str, Any]) -> Any:
    """A typed v1 update from its wire object."""
    return V1.load(obj, schema_v1.SessionUpdate)


def v2(obj: dict[str, Any]) -> Any:
    return parse_session_update(obj)


def dump_v1(items: list[Any]) -> list[dict[str, Any]]:
    return [V1.dump(item) for item in items]


def dump_v2(items: list[Any]) -> list[dict[str, Any]]:
    return [dump_session_update(item) for item in items]


def forward(adapter: V1ToV2Adapter, state: SessionState, *objs: dict[str, Any]) -> SessionState:
    """Convert v1 updates and apply the v2 result, as a v2 client behind the adapter would."""
    for obj in objs:
        for update in adapter.convert(v1(obj)):
            state.apply(update)
    return state


# ---- v1 -> v2 ------------------------------------------------------------------------------


def test_v1_tool_call_becomes_a_v2_tool_call_update() -> None:
    """A v1 ``tool_call`` becomes a ``tool_call_update`` carrying its fields and ``_meta``."""
    out = V1ToV2Adapter().convert(
        v1(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Read",
                "kind": "read",
                "status": "pending",
                "rawInput": {"path": "/a"},
                "_meta": {"a": 1},
            }
        )
    )
    assert dump_v2(out) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "title": "Read",
            "kind": "read",
            "status": "pending",
            "rawInput": {"path": "/a"},
            "_meta": {"a": 1},
        }
    ]


def test_v1_tool_call_update_meta_is_forwarded_as_is() -> None:
    """v1 has no rule for a tool_call_update's ``_meta``: the object is forwarded unchanged."""
    adapter = V1ToV2Adapter()
    state = forward(
        adapter,
        SessionState(),
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "T", "_meta": {"a": 1}},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "_meta": {"b": 2, "a": None},
        },
    )
    call = state.tool_calls["c1"]
    assert (call.title, call.status, call.meta) == ("T", "completed", {"b": 2})


def test_resent_v1_tool_call_replaces_the_call_and_its_meta() -> None:
    """A v1 tool_call for a known call replaces it: omitted fields reset, vanished keys removed."""
    adapter = V1ToV2Adapter()
    state = forward(
        adapter,
        SessionState(),
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "T",
            "kind": "edit",
            "status": "in_progress",
            "_meta": {"a": 1, "b": 2},
        },
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "U", "_meta": {"b": 3}},
    )
    call = state.tool_calls["c1"]
    assert (call.title, call.kind, call.status, call.meta) == ("U", "other", "pending", {"b": 3})


@pytest.mark.parametrize(
    ("kind", "first", "ident"),
    [
        ("compaction_update", {"compactionId": "k", "status": "in_progress"}, "compaction:k"),
        ("subagent_update", {"sessionId": "child"}, "subagent:child"),
        ("session_message", {"messageId": "sm"}, "session_message:sm"),
    ],
)
@pytest.mark.parametrize("stateful", [True, False], ids=["stateful", "stateless"])
def test_whole_object_meta_of_v1_is_preserved(
    kind: str, first: dict[str, Any], ident: str, stateful: bool
) -> None:
    """Where v1 replaces ``_meta`` whole, the v2 client ends up with exactly the new object."""
    adapter = V1ToV2Adapter(stateful=stateful)
    state = forward(
        adapter,
        SessionState(),
        {"sessionUpdate": kind, **first, "_meta": {"a": 1, "b": 2}},
        {"sessionUpdate": kind, **first, "_meta": {"b": 3, "c": None}},
    )
    assert state.entity(ident).meta == {"b": 3}


def test_stateful_v1_to_v2_sends_null_for_keys_that_disappeared() -> None:
    """The stateful adapter turns a whole replacement into one patch with removals."""
    adapter = V1ToV2Adapter()
    first = {
        "sessionUpdate": "compaction_update",
        "compactionId": "k",
        "status": "in_progress",
        "_meta": {"a": 1},
    }
    adapter.convert(v1(first))
    (out,) = adapter.convert(v1({**first, "status": "completed", "_meta": {"b": 2}}))
    assert dump_session_update(out)["_meta"] == {"a": None, "b": 2}


def test_stateless_v1_to_v2_clears_first() -> None:
    """The stateless adapter sends ``_meta: null`` in an update of its own, then the object."""
    adapter = V1ToV2Adapter(stateful=False)
    out = adapter.convert(
        v1(
            {
                "sessionUpdate": "compaction_update",
                "compactionId": "k",
                "status": "completed",
                "_meta": {"b": 2},
            }
        )
    )
    assert dump_v2(out) == [
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "k",
            "status": "completed",
            "_meta": None,
        },
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "k",
            "status": "completed",
            "_meta": {"b": 2},
        },
    ]


def test_v1_chunks_without_message_id_get_one_id_per_run() -> None:
    """Consecutive v1 chunks of one type share a made-up messageId; another update ends the run."""
    adapter = V1ToV2Adapter()
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    ids = []
    for obj in [
        chunk,
        chunk,
        {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T"},
        chunk,
        {**chunk, "messageId": "given"},
    ]:
        for update in adapter.convert(v1(obj)):
            ids.append(getattr(update, "message_id", None))
    assert ids == ["v1-1", "v1-1", None, "v1-2", "given"]
    stateless = V1ToV2Adapter(stateful=False)
    assert stateless.convert(v1(chunk))[0].message_id == "v1-agent_message"


def test_v1_plan_becomes_a_plan_update() -> None:
    """A v1 plan (entries, no id) updates the plan ``DEFAULT_PLAN_ID``."""
    entries = [{"content": "a", "priority": "high", "status": "pending"}]
    (out,) = V1ToV2Adapter().convert(v1({"sessionUpdate": "plan", "entries": entries}))
    assert dump_session_update(out) == {
        "sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": DEFAULT_PLAN_ID, "entries": entries},
    }


def test_v1_update_without_counterpart_is_dropped_with_a_diagnostic() -> None:
    """``current_mode_update`` has no v2 counterpart: nothing is sent and it is reported."""
    adapter = V1ToV2Adapter()
    assert (
        adapter.convert(v1({"sessionUpdate": "current_mode_update", "currentModeId": "ask"})) == []
    )
    assert [d.code for d in adapter.diagnostics] == ["not-convertible"]


def test_v1_session_info_meta_is_forwarded_as_is() -> None:
    """session_info_update has no v1 replacement rule: its ``_meta`` is forwarded unchanged."""
    (out,) = V1ToV2Adapter().convert(
        v1({"sessionUpdate": "session_info_update", "title": "T", "_meta": {"a": None, "b": 1}})
    )
    assert dump_session_update(out) == {
        "sessionUpdate": "session_info_update",
        "title": "T",
        "_meta": {"a": None, "b": 1},
    }


def test_sessions_are_kept_apart() -> None:
    """The adapter's state is per session: the same tool call id in two sessions is two calls."""
    adapter = V1ToV2Adapter()
    first = {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "T", "_meta": {"a": 1}}
    adapter.convert(v1(first), session_id="s1")
    (out,) = adapter.convert(v1({**first, "_meta": {"b": 1}}), session_id="s2")
    assert dump_session_update(out)["_meta"] == {"b": 1}
    notes = adapter.convert_notification(
        schema_v1.SessionNotification(session_id="s1", update=v1(first))
    )
    assert notes[0].session_id == "s1"


# ---- v2 -> v1 ------------------------------------------------------------------------------


def test_first_v2_update_becomes_a_v1_tool_call_and_later_ones_updates() -> None:
    """Stateful: the first update of a call is a v1 tool_call, later ones tool_call_update."""
    adapter = V2ToV1Adapter()
    first = adapter.convert(v2(tool(kind="read", rawInput={"p": 1})))
    later = adapter.convert(v2(tool(title="Read", status="completed")))
    assert dump_v1(first) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "",
            "kind": "read",
            "status": "pending",
            "rawInput": {"p": 1},
        }
    ]
    assert dump_v1(later) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "title": "Read",
        }
    ]


def test_stateful_v2_to_v1_sends_the_complete_merged_meta() -> None:
    """Each update touching ``_meta`` carries the whole merged object (``{}`` once cleared)."""
    adapter = V2ToV1Adapter()
    adapter.convert(v2(tool(title="T", _meta={"a": 1, "b": 2})))
    (patched,) = adapter.convert(v2(tool(_meta={"a": None, "c": 3})))
    assert V1.dump(patched)["_meta"] == {"b": 2, "c": 3}
    (untouched,) = adapter.convert(v2(tool(status="completed")))
    assert "_meta" not in V1.dump(untouched)
    (cleared,) = adapter.convert(v2(tool(_meta=None)))
    assert V1.dump(cleared)["_meta"] == {}


def test_stateless_v2_to_v1_is_lossy_for_meta() -> None:
    """Stateless, the patch object is forwarded: a v1 receiver replacing whole loses keys and
    stores the removals as null."""
    adapter = V2ToV1Adapter(stateful=False)
    adapter.convert(v2(tool(title="T", _meta={"a": 1, "b": 2})))
    (out,) = adapter.convert(v2(tool(_meta={"a": None, "c": 3})))
    v1_stored = V1.dump(out)["_meta"]  # what a v1 receiver that replaces whole now holds
    assert v1_stored == {"a": None, "c": 3}
    assert v1_stored != {"b": 2, "c": 3}  # the v2 meaning: lossy, as documented
    assert V1.dump(out)["sessionUpdate"] == "tool_call_update"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("paused", "in_progress"),
        ("cancelled", "failed"),
        ("_queued", "in_progress"),
        ("failed", "failed"),
    ],
)
@pytest.mark.parametrize("stateful", [True, False], ids=["stateful", "stateless"])
def test_statuses_v1_lacks_are_mapped(status: str, expected: str, stateful: bool) -> None:
    """Statuses v1 lacks are sent as the closest v1 status; an unknown kind as other."""
    (out,) = V2ToV1Adapter(stateful=stateful).convert(v2(tool(title="T", status=status, kind="_x")))
    assert (V1.dump(out)["status"], V1.dump(out)["kind"]) == (expected, "other")


def test_content_chunk_becomes_a_whole_content_update() -> None:
    """Stateful: a content chunk is sent as a tool_call_update with the whole content."""
    adapter = V2ToV1Adapter()
    item = {"type": "content", "content": {"type": "text", "text": "a"}}
    adapter.convert(v2(tool(title="T", content=[item])))
    (out,) = adapter.convert(
        v2({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": item})
    )
    assert V1.dump(out) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "content": [item, item],
    }
    stateless = V2ToV1Adapter(stateful=False)
    assert (
        stateless.convert(
            v2({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "c1", "content": item})
        )
        == []
    )
    assert [d.code for d in stateless.diagnostics] == ["not-convertible"]


def test_message_upsert_becomes_chunks_of_its_new_blocks() -> None:
    """Stateful: message content that extends what was sent goes out as chunks of the new blocks;
    a replacement v1 cannot show is reported."""
    adapter = V2ToV1Adapter()

    def text(value: str) -> dict[str, Any]:
        return {"type": "text", "text": value}

    out = adapter.convert(
        v2({"sessionUpdate": "agent_message", "messageId": "m", "content": [text("a"), text("b")]})
    )
    assert [V1.dump(u)["content"]["text"] for u in out] == ["a", "b"]
    out = adapter.convert(
        v2({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("c")})
    )
    assert dump_v1(out) == [
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("c")}
    ]
    out = adapter.convert(
        v2(
            {
                "sessionUpdate": "agent_message",
                "messageId": "m",
                "content": [text("a"), text("b"), text("c"), text("d")],
            }
        )
    )
    assert [V1.dump(u)["content"]["text"] for u in out] == ["d"]
    assert (
        adapter.convert(
            v2({"sessionUpdate": "agent_message", "messageId": "m", "content": [text("z")]})
        )
        == []
    )
    assert [d.code for d in adapter.diagnostics] == ["lossy-conversion"]


def test_v2_only_kinds_are_dropped_with_a_diagnostic() -> None:
    """Terminals, state updates and unknown kinds have no v1 counterpart."""
    adapter = V2ToV1Adapter()
    for obj in [
        {"sessionUpdate": "terminal_update", "terminalId": "t"},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": ""},
        {"sessionUpdate": "state_update", "state": "idle"},
        {"sessionUpdate": "_vendor"},
    ]:
        assert adapter.convert(v2(obj)) == []
    assert [d.code for d in adapter.diagnostics] == ["not-convertible"] * 4


def test_whole_object_kinds_get_the_merged_meta_in_v1() -> None:
    """compaction_update, subagent_update, session_message and session info carry merged _meta."""
    adapter = V2ToV1Adapter()
    base = {"sessionUpdate": "subagent_update", "sessionId": "child"}
    adapter.convert(v2({**base, "_meta": {"a": 1}}))
    (out,) = adapter.convert(v2({**base, "title": "T", "_meta": {"b": 2}}))
    assert V1.dump(out) == {
        "sessionUpdate": "subagent_update",
        "sessionId": "child",
        "title": "T",
        "_meta": {"a": 1, "b": 2},
    }


def test_round_trip_through_both_adapters_keeps_the_tool_call() -> None:
    """v2 → v1 (stateful, complete objects) → v2 (reading them as whole objects) keeps the call."""
    to_v1 = V2ToV1Adapter()
    to_v2 = V1ToV2Adapter(whole_meta=WHOLE_META_V1 | {"tool_call_update"})
    direct = SessionState()
    relayed = SessionState()
    for obj in [
        tool(title="Read", kind="read", _meta={"a": 1, "b": 2}),
        tool(status="in_progress", _meta={"a": None}),
        tool(
            status="completed",
            content=[{"type": "content", "content": {"type": "text", "text": "x"}}],
        ),
    ]:
        update = v2(obj)
        direct.apply(update)
        for old in to_v1.convert(update):
            for new in to_v2.convert(old):
                relayed.apply(new)
    assert relayed.tool_calls["c1"] == direct.tool_calls["c1"]


def test_convert_rejects_what_is_not_an_update() -> None:
    """Converting something that is not a session update of the right version is a UsageError."""
    with pytest.raises(UsageError):
        V2ToV1Adapter().convert("x")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        V2ToV1Adapter(stateful=False).convert("x")  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        V1ToV2Adapter().convert("x")  # type: ignore[arg-type]


def test_forwarding_complete_objects_as_patches_keeps_removed_keys() -> None:
    """By default a v1 tool_call_update's ``_meta`` is a patch: a key the sender dropped stays."""
    to_v2 = V1ToV2Adapter()
    state = forward(
        to_v2,
        SessionState(),
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "T", "_meta": {"a": 1}},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"b": 2}},
    )
    assert state.tool_calls["c1"].meta == {"a": 1, "b": 2}
    with pytest.raises(UsageError):
        V1ToV2Adapter(whole_meta={"plan"})


def test_stateless_v1_tool_call_clears_then_sends_the_call() -> None:
    """Stateless, a v1 tool_call resets omitted fields and clears ``_meta`` before its object."""
    out = V1ToV2Adapter(stateful=False).convert(
        v1({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "T", "_meta": {"a": 1}})
    )
    assert dump_v2(out) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": None},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "name": None,
            "title": "T",
            "kind": None,
            "status": None,
            "content": None,
            "locations": None,
            "rawInput": None,
            "rawOutput": None,
            "_meta": {"a": 1},
        },
    ]


def test_what_both_versions_share_is_read_from_the_generated_classes() -> None:
    """The tool call fields v1 can omit or carry, the v1 upserts and the kinds v1 lacks are
    derived from both generated modules, and match the protocol as published."""
    from agentproto.acp._relay import versions as _versions

    assert _versions._TOOL_CALL_RESET == (
        "name",
        "kind",
        "status",
        "content",
        "locations",
        "rawInput",
        "rawOutput",
    )
    assert set(_versions.TOOL_CALL_ALL) == {
        "title",
        "name",
        "kind",
        "status",
        "content",
        "locations",
        "raw_input",
        "raw_output",
        "meta",
    }
    assert {tag: kind.name for tag, kind in _versions._V1_UPSERT_KINDS.items()} == {
        "tool_call_update": "tool_call",
        "session_info_update": "session_info",
        "compaction_update": "compaction",
        "subagent_update": "subagent",
        "session_message": "session_message",
    }
    assert _versions.MESSAGE_CHUNK_KINDS == {
        "user_message_chunk": "user_message",
        "agent_message_chunk": "agent_message",
        "agent_thought_chunk": "agent_thought",
    }
    no_v1 = {cls.__name__ for cls in _versions.NO_V1} - {
        cls.__name__ for cls in _versions.MESSAGE_UPSERTS
    }
    assert no_v1 == {
        "TerminalUpdateSessionUpdate",
        "TerminalOutputChunkSessionUpdate",
        "StateUpdateSessionUpdate",
        "ToolCallContentChunkSessionUpdate",
    }


def test_a_v1_update_of_an_unknown_kind_is_a_diagnostic_never_an_internal_error() -> None:
    """A v1 update whose kind neither version knows: nothing sent, one diagnostic."""
    update = attrs.evolve(
        schema_v1.SessionInfoUpdateSessionUpdate(title="x", meta={"a": 1}), session_update="frob"
    )
    adapter = V1ToV2Adapter()
    assert adapter.convert(update) == []
    assert [(d.code, d.subject) for d in adapter.diagnostics] == [("not-convertible", "frob")]
