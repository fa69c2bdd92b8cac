"""``combine``: two consecutive updates coalesced for an intermediary, same effect on any state."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto._core.unset import UNSET
from agentproto.acp import combine, dump_session_update, parse_session_update
from tests.acp.acp_updates import apply_tolerantly, same_kind_pairs, state_after, updates


def up(obj: dict[str, Any]) -> Any:
    """A typed update from its wire object."""
    return parse_session_update(obj)


def wire(items: list[Any]) -> list[dict[str, Any]]:
    return [dump_session_update(item) for item in items]


def tool(**members: Any) -> Any:
    return up({"sessionUpdate": "tool_call_update", "toolCallId": "c1", **members})


# ---- examples ------------------------------------------------------------------------------


def test_two_upserts_merge_with_later_values_winning() -> None:
    """Two upserts of one entity become one: each field takes the later value set."""
    merged = combine(
        tool(title="Read", status="pending", kind="read"), tool(status="completed", kind=None)
    )
    assert wire(merged) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "title": "Read",
            "kind": None,
            "status": "completed",
        }
    ]


def test_meta_patches_merge_keeping_removals() -> None:
    """Two ``_meta`` objects merge by key and the later one's null (a removal) stays."""
    merged = combine(tool(_meta={"a": 1, "b": 2}), tool(_meta={"a": None, "c": 3}))
    assert wire(merged)[0]["_meta"] == {"a": None, "b": 2, "c": 3}


def test_clear_then_object_stays_two_updates() -> None:
    """A clear followed by an object cannot become the object alone: it stays two updates."""
    merged = combine(
        tool(title="T", _meta=None), tool(status="completed", _meta={"a": 1, "b": None})
    )
    assert wire(merged) == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "title": "T",
            "status": "completed",
            "_meta": None,
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "_meta": {"a": 1}},
    ]


def test_anything_then_clear_keeps_the_clear() -> None:
    """An object followed by a clear combines into the clear."""
    merged = combine(tool(_meta={"a": 1}), tool(_meta=None))
    assert wire(merged)[0]["_meta"] is None


def test_different_entities_stay_apart() -> None:
    """Updates of two tool calls, or of a tool call and a terminal, are returned unchanged."""
    first = tool(title="A")
    other = up({"sessionUpdate": "tool_call_update", "toolCallId": "c2", "title": "B"})
    assert combine(first, other) == [first, other]
    terminal = up({"sessionUpdate": "terminal_update", "terminalId": "c1"})
    assert combine(first, terminal) == [first, terminal]


def test_message_types_are_different_entities() -> None:
    """A user message and an agent message with the same id never merge."""
    first = up({"sessionUpdate": "user_message", "messageId": "m", "content": []})
    second = up({"sessionUpdate": "agent_message", "messageId": "m", "content": []})
    assert combine(first, second) == [first, second]


def test_chunk_merges_into_an_upsert_that_set_the_collection() -> None:
    """After an upsert that set the content, a chunk's item is appended to it."""
    first = up(
        {
            "sessionUpdate": "agent_message",
            "messageId": "m",
            "content": [{"type": "text", "text": "a"}],
        }
    )
    chunk = up(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m",
            "content": {"type": "text", "text": "b"},
        }
    )
    assert wire(combine(first, chunk)) == [
        {
            "sessionUpdate": "agent_message",
            "messageId": "m",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        }
    ]


def test_chunk_cannot_merge_into_an_upsert_without_the_collection() -> None:
    """When the upsert left the content alone, what the chunk appends to is unknown."""
    first = tool(status="in_progress")
    chunk = up(
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "content", "content": {"type": "text", "text": "x"}},
        }
    )
    assert combine(first, chunk) == [first, chunk]


def test_chunk_with_meta_is_never_folded_away() -> None:
    """A chunk's own ``_meta`` is data of that chunk: such a chunk stays a chunk."""
    first = tool(content=[])
    chunk = up(
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "terminal", "terminalId": "t"},
            "_meta": {"trace": 1},
        }
    )
    assert combine(first, chunk) == [first, chunk]
    assert combine(chunk, tool(content=[])) == [chunk, tool(content=[])]


def test_upsert_replacing_the_collection_absorbs_the_chunk_before_it() -> None:
    """A chunk followed by an upsert that replaces the collection is the upsert alone."""
    chunk = up(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": "k",
            "content": {"type": "text", "text": "x"},
        }
    )
    upsert = up(
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "k",
            "status": "completed",
            "summary": None,
        }
    )
    assert combine(chunk, upsert) == [upsert]


def test_terminal_chunk_bytes_append_to_the_output_snapshot() -> None:
    """A terminal's output snapshot and a chunk after it become one snapshot of all bytes."""
    first = up({"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "YWI="}})
    chunk = up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "Yw=="})
    assert wire(combine(first, chunk)) == [
        {"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "YWJj"}}
    ]


def test_invalid_updates_are_not_combined() -> None:
    """An update a client would reject (bad base64) is passed on as is, never merged."""
    first = up({"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "YWI="}})
    bad = up({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "%%"})
    assert combine(first, bad) == [first, bad]


def test_chunks_never_merge_with_each_other() -> None:
    """Two chunks stay two chunks (one carries one item)."""
    one = up(
        {
            "sessionUpdate": "agent_message_chunk",
            "messageId": "m",
            "content": {"type": "text", "text": "a"},
        }
    )
    assert combine(one, one) == [one, one]


def test_plans_latest_values_and_notices() -> None:
    """A plan update is replaced by the next one for its id, latest-value kinds keep the last,
    notices stay two."""
    plan = {"type": "items", "planId": "p", "entries": []}
    first = up({"sessionUpdate": "plan_update", "plan": plan, "_meta": {"a": 1}})
    second = up({"sessionUpdate": "plan_update", "plan": plan})
    removed = up({"sessionUpdate": "plan_removed", "planId": "p"})
    assert combine(first, second) == [second]
    assert combine(first, removed) == [removed]
    assert combine(removed, first) == [removed, first]
    usage = up({"sessionUpdate": "usage_update", "used": 1, "size": 9})
    later = up({"sessionUpdate": "usage_update", "used": 2, "size": 9})
    assert combine(usage, later) == [later]
    notice = up({"sessionUpdate": "notice", "severity": "info", "title": "t"})
    assert combine(notice, notice) == [notice, notice]


def test_unknown_kinds_stay_apart() -> None:
    """Updates of an unknown kind are never combined."""
    other = up({"sessionUpdate": "_vendor", "x": 1})
    assert combine(other, other) == [other, other]


def test_arguments_are_not_mutated() -> None:
    """combine builds new updates and leaves its arguments as they were."""
    first = tool(content=[{"type": "terminal", "terminalId": "t"}], _meta={"a": 1})
    second = up(
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "c1",
            "content": {"type": "terminal", "terminalId": "u"},
        }
    )
    before = copy.deepcopy((first, second))
    combine(first, second)
    combine(first, tool(_meta={"b": None}))
    assert (first, second) == before


def test_unknown_members_of_merged_upserts_are_kept() -> None:
    """Members the schema does not declare survive a merge, the later value winning."""
    first = parse_session_update(
        {"sessionUpdate": "session_info_update", "x": 1, "y": 1}, diagnostics=[]
    )
    second = parse_session_update({"sessionUpdate": "session_info_update", "y": 2}, diagnostics=[])
    (merged,) = combine(first, second)
    assert merged.extra == {"x": 1, "y": 2}
    assert merged.meta is UNSET


# ---- the property ----------------------------------------------------------------------------

history = st.lists(updates, max_size=6)


def check_equivalent(before: list[Any], first: Any, second: Any) -> None:
    """Applying combine(first, second) equals applying first then second."""
    expected = apply_tolerantly(state_after(before), [first, second])
    actual = apply_tolerantly(state_after(before), combine(first, second))
    assert actual == expected
    assert actual.to_json() == expected.to_json()
    assert list(actual.to_json()["entities"]) == list(expected.to_json()["entities"])


@given(history, updates, updates)
@settings(max_examples=600)
def test_combine_has_the_effect_of_both_updates(before: list[Any], first: Any, second: Any) -> None:
    """On any stored state, the combined updates have the effect of the two in order."""
    check_equivalent(before, first, second)


@given(history, same_kind_pairs)
@settings(max_examples=600)
def test_combine_has_the_effect_of_both_updates_of_one_entity_kind(
    before: list[Any], pair: tuple[Any, Any]
) -> None:
    """The property again, on pairs of one entity kind, which coalesce far more often."""
    check_equivalent(before, *pair)


@pytest.mark.slow
@given(history, same_kind_pairs)
@settings(max_examples=10_000)
def test_combine_of_one_entity_kind_slow(before: list[Any], pair: tuple[Any, Any]) -> None:
    """The same-kind combine property over 10 000 examples."""
    check_equivalent(before, *pair)


@pytest.mark.slow
@given(history, updates, updates)
@settings(max_examples=10_000)
def test_combine_has_the_effect_of_both_updates_slow(
    before: list[Any], first: Any, second: Any
) -> None:
    """The combine property over 10 000 random stored states and update pairs."""
    check_equivalent(before, first, second)


@given(history, st.lists(updates, min_size=1, max_size=6))
@settings(max_examples=300)
def test_folding_a_run_with_combine_keeps_its_effect(before: list[Any], run: list[Any]) -> None:
    """An intermediary folding a run pairwise (last output with the next input) keeps its effect."""
    out: list[Any] = [run[0]]
    for update in run[1:]:
        out[-1:] = combine(out[-1], update)
    expected = apply_tolerantly(state_after(before), run)
    actual = apply_tolerantly(state_after(before), out)
    assert actual == expected
    assert len(out) <= len(run)
