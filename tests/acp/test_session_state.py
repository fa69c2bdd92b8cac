"""``SessionState``: every ``session/update`` rule of ACP v2, applied in receive order."""

from __future__ import annotations

import base64
import copy
import time
import tracemalloc
from typing import Any

import attrs
import orjson
import pytest

from agentproto import SchemaError, UsageError
from agentproto.acp import (
    SessionState,
    parse_permission_request,
    parse_session_update,
    schema,
)
from tests.acp.acp_updates import tool_update as tool


def apply(state: SessionState, *objs: dict[str, Any]) -> SessionState:
    """Apply wire updates (parsed strictly) in order."""
    for obj in objs:
        state.apply(parse_session_update(obj))
    return state


def fresh(*objs: dict[str, Any]) -> SessionState:
    return apply(SessionState("s1"), *objs)


def entities(state: SessionState) -> dict[str, Any]:
    result: dict[str, Any] = state.to_json()["entities"]
    return result


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---- tool calls ------------------------------------------------------------------------------


def test_new_tool_call_starts_with_the_documented_defaults() -> None:
    """An unseen id creates a call of kind other, status pending, without title, name or caps."""
    state = fresh(tool())
    call = state.tool_calls["c1"]
    assert (call.kind, call.status, call.title, call.name, call.capabilities) == (
        "other",
        "pending",
        None,
        None,
        None,
    )
    assert entities(state) == {
        "tool_call:c1": {"toolCallId": "c1", "kind": "other", "status": "pending"}
    }


def test_null_resets_kind_and_status_and_clears_the_rest() -> None:
    """``kind: null`` resets to other, ``status: null`` to pending; other nulls clear the field."""
    state = fresh(
        tool(
            title="T",
            name="read_file",
            kind="read",
            status="completed",
            rawInput={"p": 1},
            rawOutput=[1],
            capabilities={"cancel": {}},
        ),
        tool(
            title=None,
            name=None,
            kind=None,
            status=None,
            rawInput=None,
            rawOutput=None,
            capabilities=None,
        ),
    )
    assert entities(state)["tool_call:c1"] == {
        "toolCallId": "c1",
        "kind": "other",
        "status": "pending",
    }


def test_omitted_fields_are_unchanged() -> None:
    """A field an update omits keeps its value."""
    state = fresh(tool(title="T", kind="edit"), tool(status="in_progress"))
    assert entities(state)["tool_call:c1"] == {
        "toolCallId": "c1",
        "title": "T",
        "kind": "edit",
        "status": "in_progress",
    }


def test_capabilities_are_replaced_whole() -> None:
    """A capabilities object replaces the previous one whole."""
    state = fresh(tool(capabilities={"cancel": {"x": 1}}), tool(capabilities={}))
    assert entities(state)["tool_call:c1"]["capabilities"] == {}


@pytest.mark.parametrize("clear", [[], None], ids=["empty", "null"])
def test_collections_are_replaced_whole_and_cleared(clear: Any) -> None:
    """``content`` and ``locations`` are replaced whole; ``[]`` and ``null`` both clear them."""
    first = [{"type": "content", "content": text("a")}, {"type": "terminal", "terminalId": "t"}]
    state = fresh(tool(content=first, locations=[{"path": "/a"}, {"path": "/b", "line": 3}]))
    assert len(state.tool_calls["c1"].content) == 2
    apply(
        state, tool(content=[{"type": "terminal", "terminalId": "u"}], locations=[{"path": "/c"}])
    )
    assert entities(state)["tool_call:c1"]["content"] == [{"type": "terminal", "terminalId": "u"}]
    assert entities(state)["tool_call:c1"]["locations"] == [{"path": "/c"}]
    apply(state, tool(content=clear, locations=clear))
    assert "content" not in entities(state)["tool_call:c1"]
    assert "locations" not in entities(state)["tool_call:c1"]


def test_unknown_kind_shows_as_other_and_unknown_status_counts_as_in_progress() -> None:
    """An unknown kind is kept but displayed as other; an unknown status counts as in progress."""
    call = fresh(tool(kind="_telepathy", status="_queued")).tool_calls["c1"]
    assert (call.kind, call.display_kind) == ("_telepathy", "other")
    assert (call.status, call.effective_status, call.finished) == ("_queued", "in_progress", False)
    known = fresh(tool(kind="fetch", status="paused")).tool_calls["c1"]
    assert (known.display_kind, known.effective_status) == ("fetch", "paused")
    assert fresh(tool(status="cancelled")).tool_calls["c1"].finished


def test_content_chunks_append_and_an_upsert_replaces_them() -> None:
    """Chunks append in order; an upsert's content replaces everything; later chunks append."""

    def chunk(value: str) -> dict[str, Any]:
        return {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "content", "content": text(value)},
        }

    state = fresh(chunk("a"), chunk("b"))
    assert [c.content.text for c in state.tool_calls["c1"].content] == ["a", "b"]
    apply(state, tool(content=[{"type": "content", "content": text("x")}]), chunk("c"))
    assert [c.content.text for c in state.tool_calls["c1"].content] == ["x", "c"]


def test_chunk_for_an_unseen_tool_call_creates_it() -> None:
    """A content chunk for an unseen id creates the call with its defaults."""
    state = fresh(
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "new",
            "content": {"type": "terminal", "terminalId": "t"},
        }
    )
    assert entities(state)["tool_call:new"]["status"] == "pending"


def test_update_content_list_is_not_shared_with_the_state() -> None:
    """Chunks appended to the stored content never change the update that set it."""
    update = parse_session_update(tool(content=[]))
    state = SessionState()
    state.apply(update)
    apply(
        state,
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "terminal", "terminalId": "t"},
        },
    )
    assert update.content == []


# ---- the permission request's tool call ------------------------------------------------------


def permission(tool_call: dict[str, Any], subject_type: str = "tool_call") -> Any:
    subject: dict[str, Any] = {"type": subject_type}
    if subject_type == "tool_call":
        subject["toolCall"] = tool_call
    else:
        subject.update(command="ls", cwd="/w")
    return parse_permission_request(
        {
            "sessionId": "s1",
            "title": "Allow?",
            "options": [{"optionId": "o", "name": "Allow", "kind": "allow_once"}],
            "subject": subject,
        },
        diagnostics=[],
    )


def test_permission_request_tool_call_patches_the_stored_call() -> None:
    """The subject's toolCall is applied like a tool_call_update, ``_meta`` patch included."""
    state = fresh(tool(title="Edit", _meta={"a": 1, "b": 2}))
    state.apply_permission_request(
        permission({"toolCallId": "c1", "status": "pending", "_meta": {"a": None, "c": 3}})
    )
    assert entities(state)["tool_call:c1"] == {
        "toolCallId": "c1",
        "title": "Edit",
        "kind": "other",
        "status": "pending",
        "_meta": {"b": 2, "c": 3},
    }


def test_permission_request_creates_an_unseen_call() -> None:
    """A first-seen toolCallId in a permission request creates the tool call."""
    state = SessionState()
    state.apply_permission_request(permission({"toolCallId": "n", "title": "Run"}))
    assert state.tool_calls["n"].title == "Run"


def test_permission_request_with_another_subject_changes_nothing() -> None:
    """Only a tool-call subject touches the state; the prompt's own title never does."""
    state = fresh(tool(title="T"))
    before = copy.deepcopy(state)
    state.apply_permission_request(permission({}, subject_type="command"))
    assert state == before


# ---- terminals -------------------------------------------------------------------------------


def terminal(**members: Any) -> dict[str, Any]:
    return {"sessionUpdate": "terminal_update", "terminalId": "t1", **members}


def out_chunk(data: str, ident: str = "t1") -> dict[str, Any]:
    return {"sessionUpdate": "terminal_output_chunk", "terminalId": ident, "data": data}


def test_terminal_output_replaces_and_chunks_append_decoded_on_their_own() -> None:
    """``output`` replaces all bytes; each chunk is decoded on its own and appended."""
    state = fresh(
        terminal(command="ls", output={"data": b64(b"old")}), terminal(output={"data": b64(b"ab")})
    )
    apply(state, out_chunk("Yw=="), out_chunk("ZA=="))  # never decoded as "Yw==ZA=="
    assert bytes(state.terminals["t1"].output or b"") == b"abcd"
    assert entities(state)["terminal:t1"]["output"] == {"data": b64(b"abcd")}


def test_utf8_sequence_split_across_chunks_is_whole_again() -> None:
    """Bytes are kept raw, so a character split between two chunks decodes whole."""
    encoded = "é€".encode()
    state = fresh(
        out_chunk(b64(encoded[:1])), out_chunk(b64(encoded[1:4])), out_chunk(b64(encoded[4:]))
    )
    assert state.terminals["t1"].text == "é€"


def test_terminal_output_null_clears_and_exit_status_marks_exit() -> None:
    """``output: null`` clears the bytes; an exit status marks the terminal exited."""
    state = fresh(out_chunk(b64(b"x")), terminal(output=None, exitStatus={"exitCode": 1}))
    assert state.terminals["t1"].output is None
    assert state.terminals["t1"].exited
    assert entities(state)["terminal:t1"] == {"terminalId": "t1", "exitStatus": {"exitCode": 1}}


def test_empty_output_is_shown_as_empty_data() -> None:
    """An empty output snapshot is output (shown as empty data), not the absence of output."""
    assert entities(fresh(terminal(output={"data": ""})))["terminal:t1"]["output"] == {"data": ""}


@pytest.mark.parametrize("data", ["!!", "YQ", "YQ==YQ==", "é", "YQ==\n"])
def test_invalid_base64_chunk_is_an_error_and_changes_nothing(data: str) -> None:
    """A chunk that is not valid base64 raises SchemaError at /data, leaving the state as it was."""
    state = fresh(out_chunk(b64(b"ok")))
    before = copy.deepcopy(state)
    with pytest.raises(SchemaError) as caught:
        apply(state, out_chunk(data))
    assert (caught.value.keyword, caught.value.location) == ("contentEncoding", "/data")
    assert state == before
    with pytest.raises(SchemaError):
        apply(state, out_chunk(data, ident="unseen"))
    assert "unseen" not in state.terminals


def test_invalid_base64_output_rejects_the_whole_update() -> None:
    """A terminal update with invalid output bytes applies none of its fields."""
    state = fresh(terminal(command="ls"))
    before = copy.deepcopy(state)
    with pytest.raises(SchemaError) as caught:
        apply(state, terminal(command="rm", output={"data": "%%"}, _meta={"a": 1}))
    assert caught.value.location == "/output/data"
    assert state == before


# ---- messages --------------------------------------------------------------------------------


def msg(tag: str, ident: str = "m1", **members: Any) -> dict[str, Any]:
    return {"sessionUpdate": tag, "messageId": ident, **members}


def test_each_message_type_has_its_own_id_space() -> None:
    """A user message, an agent message and an agent thought may share an id."""
    state = fresh(
        msg("user_message", content=[text("u")]),
        msg("agent_message", content=[text("a")]),
        msg("agent_thought_chunk", content=text("t")),
    )
    assert list(entities(state)) == ["user_message:m1", "agent_message:m1", "agent_thought:m1"]
    assert state.user_messages["m1"].content[0].text == "u"
    assert state.agent_thoughts["m1"].kind == "agent_thought"


@pytest.mark.parametrize("tag", ["user_message", "agent_message", "agent_thought"])
def test_message_content_replaces_chunks_and_later_chunks_append(tag: str) -> None:
    """An upsert's content replaces everything so far (chunks included); later chunks append."""
    state = fresh(
        msg(tag + "_chunk", content=text("a")),
        msg(tag + "_chunk", content=text("b")),
        msg(tag, content=[text("X")]),
        msg(tag + "_chunk", content=text("c")),
    )
    assert entities(state)[f"{tag}:m1"]["content"] == [text("X"), text("c")]
    apply(state, msg(tag, content=None))
    assert entities(state)[f"{tag}:m1"] == {"messageId": "m1"}


def test_new_message_without_content_starts_empty() -> None:
    """A new message whose upsert omits content starts with none."""
    state = fresh(msg("agent_message", _meta={"k": 1}))
    assert entities(state) == {"agent_message:m1": {"messageId": "m1", "_meta": {"k": 1}}}


# ---- session info, compaction, subagents, session messages ----------------------------------


def test_session_info_is_patched() -> None:
    """Session info fields are patch fields: omitted unchanged, null cleared."""
    state = fresh(
        {"sessionUpdate": "session_info_update", "title": "T", "updatedAt": "2026-01-01T00:00:00Z"},
        {"sessionUpdate": "session_info_update", "title": None},
    )
    assert entities(state) == {"session_info": {"updatedAt": "2026-01-01T00:00:00Z"}}


def compaction(**members: Any) -> dict[str, Any]:
    return {"sessionUpdate": "compaction_update", "compactionId": "k", **members}


def test_first_compaction_notification_creates_it_in_progress_and_fixes_its_position() -> None:
    """A summary chunk first creates the compaction in progress, at that position."""
    state = fresh(
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k", "content": text("s")},
        tool(title="later"),
        compaction(status="completed"),
    )
    assert list(entities(state)) == ["compaction:k", "tool_call:c1"]
    assert entities(state)["compaction:k"] == {
        "compactionId": "k",
        "status": "completed",
        "summary": [text("s")],
    }
    assert (
        fresh(
            {"sessionUpdate": "compaction_summary_chunk", "compactionId": "j", "content": text("x")}
        )
        .compactions["j"]
        .status
        == "in_progress"
    )


def test_compaction_status_is_required_and_the_rest_are_patch_fields() -> None:
    """Every update sets the status; summary, error and _meta are patched; ``[]`` clears summary."""
    state = fresh(compaction(status="in_progress", summary=[text("a")], error="e", _meta={"x": 1}))
    apply(state, compaction(status="failed"))
    assert entities(state)["compaction:k"] == {
        "compactionId": "k",
        "status": "failed",
        "summary": [text("a")],
        "error": "e",
        "_meta": {"x": 1},
    }
    apply(state, compaction(status="completed", summary=[], error=None))
    assert entities(state)["compaction:k"] == {
        "compactionId": "k",
        "status": "completed",
        "_meta": {"x": 1},
    }
    with pytest.raises(SchemaError):
        parse_session_update(compaction(summary=[]))


def subagent(**members: Any) -> dict[str, Any]:
    return {"sessionUpdate": "subagent_update", "sessionId": "child", **members}


def test_subagent_additional_directories_null_inherits_and_differs_from_empty() -> None:
    """``additionalDirectories: null`` means inherit (absent), ``[]`` means none (shown)."""
    state = fresh(subagent(title="Child", additionalDirectories=[]))
    assert entities(state)["subagent:child"] == {
        "sessionId": "child",
        "title": "Child",
        "additionalDirectories": [],
    }
    apply(state, subagent(additionalDirectories=None, cwd="/w", state={"state": "running"}))
    child = state.subagents["child"]
    assert child.additional_directories is None
    assert entities(state)["subagent:child"] == {
        "sessionId": "child",
        "title": "Child",
        "state": {"state": "running"},
        "cwd": "/w",
    }
    apply(state, subagent(additionalDirectories=["/x"], state=None))
    assert entities(state)["subagent:child"]["additionalDirectories"] == ["/x"]
    assert child.state is None


def test_session_message_upsert_and_chunks() -> None:
    """A session message is patched by its upserts and its chunks append to its content."""
    state = fresh(
        {"sessionUpdate": "session_message_chunk", "messageId": "sm", "content": text("a")},
        {"sessionUpdate": "session_message", "messageId": "sm", "senderSessionId": "other"},
        {"sessionUpdate": "session_message_chunk", "messageId": "sm", "content": text("b")},
        {"sessionUpdate": "session_message", "messageId": "sm", "recipientMessageId": "r"},
    )
    assert entities(state)["session_message:sm"] == {
        "messageId": "sm",
        "senderSessionId": "other",
        "recipientMessageId": "r",
        "content": [text("a"), text("b")],
    }


# ---- plans and latest values ----------------------------------------------------------------


def plan(ident: str, entries: int, meta: Any = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "sessionUpdate": "plan_update",
        "plan": {
            "type": "items",
            "planId": ident,
            "entries": [
                {"content": f"e{i}", "priority": "low", "status": "pending"} for i in range(entries)
            ],
        },
    }
    if meta is not None:
        obj["_meta"] = meta
    return obj


def test_plan_update_replaces_the_plan_with_its_id_and_its_meta_is_not_a_patch() -> None:
    """A plan update replaces that plan whole, ``_meta`` included (no key-level patch)."""
    state = fresh(plan("p", 2, {"a": 1, "b": 2}), plan("q", 1), plan("p", 1, {"a": None}))
    assert entities(state)["plan:p"] == {
        "planId": "p",
        "plan": {
            "type": "items",
            "planId": "p",
            "entries": [{"content": "e0", "priority": "low", "status": "pending"}],
        },
        "_meta": {"a": None},
    }
    apply(state, plan("p", 0))
    assert "_meta" not in entities(state)["plan:p"]


def test_plan_removed_deletes_and_a_new_plan_goes_last() -> None:
    """``plan_removed`` deletes the plan; a plan with that id later starts a new entity."""
    state = fresh(plan("p", 1), plan("q", 1), {"sessionUpdate": "plan_removed", "planId": "p"})
    assert list(state.plans) == ["q"]
    apply(state, {"sessionUpdate": "plan_removed", "planId": "missing"}, plan("p", 0))
    assert list(entities(state)) == ["plan:q", "plan:p"]


def test_other_known_kinds_keep_their_latest_value_and_notices_their_order() -> None:
    """Available commands, config options, usage and state keep the latest; notices append."""
    state = fresh(
        {"sessionUpdate": "usage_update", "used": 1, "size": 10},
        {"sessionUpdate": "notice", "severity": "info", "title": "one"},
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"type": "command", "name": "a", "description": "d"}],
        },
        {"sessionUpdate": "config_option_update", "configOptions": []},
        {"sessionUpdate": "state_update", "state": "running"},
        {"sessionUpdate": "usage_update", "used": 5, "size": 10},
        {"sessionUpdate": "notice", "severity": "warning", "title": "two"},
        {"sessionUpdate": "state_update", "state": "idle"},
    )
    assert entities(state) == {
        "usage": {"used": 5, "size": 10},
        "notices": [
            {"severity": "info", "title": "one"},
            {"severity": "warning", "title": "two"},
        ],
        "available_commands": {
            "availableCommands": [{"type": "command", "name": "a", "description": "d"}]
        },
        "config_options": {"configOptions": []},
        "state": {"state": "idle"},
    }
    assert state.usage is not None and state.usage.used == 5


def test_unknown_kind_is_kept_and_reported() -> None:
    """An unknown sessionUpdate kind changes no entity, is kept whole and gives a diagnostic."""
    state = fresh({"sessionUpdate": "_vendor/progress", "pct": 5})
    assert entities(state) == {}
    assert state.unknown[0].extra == {"pct": 5}
    (diagnostic,) = state.diagnostics
    assert (diagnostic.code, diagnostic.subject) == ("unknown-session-update", "_vendor/progress")


# ---- which _meta is a patch -----------------------------------------------------------------

PATCHED = {
    "tool_call": (tool(), "tool_call:c1"),
    "terminal": (terminal(), "terminal:t1"),
    "user_message": (msg("user_message"), "user_message:m1"),
    "agent_message": (msg("agent_message"), "agent_message:m1"),
    "agent_thought": (msg("agent_thought"), "agent_thought:m1"),
    "session_info": ({"sessionUpdate": "session_info_update"}, "session_info"),
    "compaction": (compaction(status="in_progress"), "compaction:k"),
    "subagent": (subagent(), "subagent:child"),
    "session_message": (
        {"sessionUpdate": "session_message", "messageId": "sm"},
        "session_message:sm",
    ),
}


@pytest.mark.parametrize(("update", "key"), list(PATCHED.values()), ids=list(PATCHED))
def test_upsert_meta_is_a_metadata_patch(update: dict[str, Any], key: str) -> None:
    """For each upsert the seed lists, ``_meta`` patches by top-level key and null clears."""
    state = fresh(
        {**update, "_meta": {"a": 1, "b": {"x": 1}}},
        {**update, "_meta": {"a": None, "b": {"y": None}}},
    )
    assert entities(state)[key]["_meta"] == {"b": {"y": None}}
    apply(state, update)
    assert entities(state)[key]["_meta"] == {"b": {"y": None}}
    apply(state, {**update, "_meta": {}})
    assert entities(state)[key]["_meta"] == {"b": {"y": None}}
    apply(state, {**update, "_meta": None})
    assert "_meta" not in entities(state)[key]
    apply(state, {**update, "_meta": {"c": None}})
    assert "_meta" not in entities(state)[key]


NOT_PATCHED = {
    "tool_call_content_chunk": (
        tool(_meta={"a": 1}),
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "terminal", "terminalId": "t"},
        },
        "tool_call:c1",
    ),
    "terminal_output_chunk": (terminal(_meta={"a": 1}), out_chunk("YQ=="), "terminal:t1"),
    "agent_message_chunk": (
        msg("agent_message", _meta={"a": 1}),
        msg("agent_message_chunk", content=text("x")),
        "agent_message:m1",
    ),
    "compaction_summary_chunk": (
        compaction(status="in_progress", _meta={"a": 1}),
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "k", "content": text("x")},
        "compaction:k",
    ),
    "session_message_chunk": (
        {"sessionUpdate": "session_message", "messageId": "sm", "_meta": {"a": 1}},
        {"sessionUpdate": "session_message_chunk", "messageId": "sm", "content": text("x")},
        "session_message:sm",
    ),
}


@pytest.mark.parametrize(
    ("upsert", "chunk", "key"), list(NOT_PATCHED.values()), ids=list(NOT_PATCHED)
)
def test_chunk_meta_never_touches_the_stored_metadata(
    upsert: dict[str, Any], chunk: dict[str, Any], key: str
) -> None:
    """A chunk's ``_meta`` (an object or null) describes the chunk only: the entity's stays."""
    state = fresh(upsert, {**chunk, "_meta": {"a": None, "b": 2}}, {**chunk, "_meta": None})
    assert entities(state)[key]["_meta"] == {"a": 1}


def test_nested_meta_of_content_items_is_kept_whole() -> None:
    """The ``_meta`` of a content block is data of that block, kept whole with its nulls."""
    state = fresh(
        tool(content=[{"type": "content", "content": {**text("a"), "_meta": {"n": None}}}])
    )
    assert entities(state)["tool_call:c1"]["content"][0]["content"]["_meta"] == {"n": None}


def test_replacing_a_field_leaves_unmentioned_meta_keys() -> None:
    """An update replacing another field (message content) leaves the _meta keys it omits."""
    state = fresh(
        msg("agent_message", content=[text("a")], _meta={"k": 1}),
        msg("agent_message", content=[text("b")]),
    )
    assert entities(state)["agent_message:m1"] == {
        "messageId": "m1",
        "content": [text("b")],
        "_meta": {"k": 1},
    }


# ---- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [5, "x", [1], True])
def test_meta_that_is_not_an_object_is_an_error_and_changes_nothing(bad: Any) -> None:
    """A typed upsert whose ``_meta`` is not an object or None raises at /_meta, state intact."""
    state = fresh(tool(title="T", _meta={"a": 1}))
    before = copy.deepcopy(state)
    update = attrs.evolve(parse_session_update(tool(title="changed")), meta=bad)
    with pytest.raises(SchemaError) as caught:
        state.apply(update)
    assert caught.value.location == "/_meta"
    assert state == before
    assert state.tool_calls["c1"].title == "T"


def test_meta_that_is_not_an_object_on_the_wire() -> None:
    """On the wire a bad ``_meta`` is rejected strictly and dropped with a diagnostic tolerantly."""
    obj = tool(title="T", _meta=[1])
    with pytest.raises(SchemaError) as caught:
        parse_session_update(obj)
    assert caught.value.location == "/_meta"
    diagnostics: list[Any] = []
    state = SessionState()
    state.apply(parse_session_update(obj, diagnostics=diagnostics))
    assert [d.code for d in diagnostics] == ["invalid-field-defaulted"]
    assert entities(state)["tool_call:c1"] == {
        "toolCallId": "c1",
        "title": "T",
        "kind": "other",
        "status": "pending",
    }


def test_wrong_type_in_a_patch_field() -> None:
    """A wrong type in a patch field: strict parsing rejects the update, tolerant drops it."""
    obj = tool(title=5, status="completed")
    with pytest.raises(SchemaError) as caught:
        parse_session_update(obj)
    assert (caught.value.keyword, caught.value.location) == ("type", "/title")
    diagnostics: list[Any] = []
    state = fresh(tool(title="T"))
    state.apply(parse_session_update(obj, diagnostics=diagnostics))
    assert diagnostics[0].path == "/title"
    assert entities(state)["tool_call:c1"]["title"] == "T"
    assert entities(state)["tool_call:c1"]["status"] == "completed"


def test_hand_built_update_with_a_non_list_collection_is_a_usage_error() -> None:
    """A typed update holding a non-list collection raises UsageError and changes nothing."""
    state = fresh(tool(title="T"))
    before = copy.deepcopy(state)
    bad = schema.ToolCallUpdateSessionUpdate(tool_call_id="c1", title="x", content=5)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        state.apply(bad)
    assert state == before
    with pytest.raises(UsageError):
        state.apply(schema.ToolCallUpdateSessionUpdate(tool_call_id=7))  # type: ignore[arg-type]
    assert state == before


def test_applying_something_else_is_a_usage_error() -> None:
    """Only session updates can be applied."""
    with pytest.raises(UsageError):
        SessionState().apply({"sessionUpdate": "tool_call_update"})  # type: ignore[arg-type]


# ---- reading ---------------------------------------------------------------------------------


def test_issue_example_json() -> None:
    """The issue's example: defaults shown, a removed ``_meta`` key gone, compact JSON exact."""
    state = fresh(
        tool(title="Read", _meta={"a": 1, "b": 2}), tool(status="completed", _meta={"a": None})
    )
    assert orjson.dumps(state.to_json()) == (
        b'{"entities":{"tool_call:c1":{"toolCallId":"c1","title":"Read","kind":"other",'
        b'"status":"completed","_meta":{"b":2}}}}'
    )


def test_entities_in_first_seen_order_and_typed_access() -> None:
    """keys(), entities() and entity() give the entities in the order they appeared."""
    state = fresh(
        terminal(),
        tool(),
        {"sessionUpdate": "session_info_update", "title": "S"},
        {"sessionUpdate": "notice", "severity": "info", "title": "n"},
        terminal(command="ls"),
    )
    assert state.keys() == ["terminal:t1", "tool_call:c1", "session_info", "notices"]
    assert [type(v).__name__ for _, v in state.entities()] == [
        "TerminalState",
        "ToolCallState",
        "SessionInfoState",
        "list",
    ]
    assert state.entity("terminal:t1").command == "ls"
    with pytest.raises(KeyError):
        state.entity("tool_call:nope")
    with pytest.raises(KeyError):
        state.entity("usage")
    assert repr(state) == "<SessionState 's1': 4 entities>"
    info = state.session_info
    state.session_info = None
    assert state.session_info is None
    state.session_info = info
    assert state.entity("session_info") is info


def test_usage_cost_is_a_three_state_field() -> None:
    """usage_update.cost: omitted keeps the last cost, null clears it, a value replaces it."""
    from agentproto.acp import UNSET, SessionState, combine, parse_session_update

    def usage(**extra: object) -> object:
        return parse_session_update(
            {"sessionUpdate": "usage_update", "used": 1, "size": 9, **extra}
        )

    state = SessionState()
    state.apply(usage(cost={"amount": 0.5, "currency": "USD"}))
    state.apply(usage(used=2))
    assert state.usage is not None and state.usage.used == 2
    assert state.usage.cost is not UNSET and state.usage.cost.amount == 0.5
    state.apply(usage(cost=None))
    assert state.usage.cost is UNSET
    assert "cost" not in state.to_json()["entities"]["usage"]
    # combining keeps the first cost when the second omits it, and a clear stays a clear
    merged = combine(usage(cost={"amount": 1.0, "currency": "EUR"}), usage(used=3))
    assert len(merged) == 1 and merged[0].cost.currency == "EUR" and merged[0].used == 3
    cleared = combine(usage(cost=None), usage(used=4))
    assert cleared[0].cost is None


# ---- _meta patches cost the size of the patch ------------------------------------------------


def _patch_seconds(keys: int, patches: int) -> float:
    """CPU seconds of ``patches`` one-key ``_meta`` patches on a tool call holding ``keys``
    keys (the best of three runs)."""
    best = float("inf")
    for _ in range(3):
        state = fresh(tool(_meta={f"k{i}": i for i in range(keys)}))
        updates = [
            parse_session_update(tool(_meta={f"k{n % 7}": None if n % 3 else n}))
            for n in range(patches)
        ]
        start = time.process_time()
        for update in updates:
            state.apply(update)
        best = min(best, time.process_time() - start)
    return best


def test_a_meta_patch_costs_the_patch_not_the_stored_metadata() -> None:
    """1,000 one-key patches take about as long on 100,000 stored keys as on 1,000 (each
    copied the whole stored object: 100 times as long), and allocate no copy of it."""
    small, large = _patch_seconds(1_000, 1_000), _patch_seconds(100_000, 1_000)
    assert large < 10 * small + 0.05, (small, large)
    state = fresh(tool(_meta={f"k{i}": i for i in range(100_000)}))
    update = parse_session_update(tool(_meta={"k1": None, "new": [1]}))
    tracemalloc.start()
    try:
        state.apply(update)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100_000
    meta = state.tool_calls["c1"].meta
    assert meta is not None and len(meta) == 100_000 and "k1" not in meta and meta["new"] == [1]


def test_meta_patched_in_place_leaves_what_was_handed_out_unchanged() -> None:
    """The session's JSON, and a resync built from it, do not change with later patches; a
    rejected update leaves the stored metadata as it was."""
    state = fresh(tool(_meta={"a": 1, "b": 2}))
    before = state.to_json()
    apply(state, tool(_meta={"a": None, "c": 3}))
    assert before["entities"]["tool_call:c1"]["_meta"] == {"a": 1, "b": 2}
    assert state.to_json()["entities"]["tool_call:c1"]["_meta"] == {"b": 2, "c": 3}
    state = fresh(terminal(command="ls", _meta={"a": 1}))
    with pytest.raises(SchemaError):
        apply(state, terminal(output={"data": "%%"}, _meta={"a": None, "b": 2}))
    assert state.terminals["t1"].meta == {"a": 1}
