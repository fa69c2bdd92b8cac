"""Tests of agentproto.agui._history: serialization, run lineage, compaction."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import DecodeError, InternalError, ProtocolError, SchemaError, UsageError
from agentproto.agui import Compaction, Consumer, History, compact_events, dump_event, parse_event
from agentproto.agui._history import compaction as _compaction
from agentproto.agui._history import history as _history
from tests.docblocks import run_doc_block
from tests.jsonsame import same_json

THREAD = "t-history"


# ---- helpers ------------------------------------------------------------------------------


def started(run_id: str, **members: Any) -> dict[str, Any]:
    return {"type": "RUN_STARTED", "threadId": THREAD, "runId": run_id, **members}


def finished(run_id: str, **members: Any) -> dict[str, Any]:
    return {"type": "RUN_FINISHED", "threadId": THREAD, "runId": run_id, **members}


def run(run_id: str, *body: dict[str, Any], **start: Any) -> list[dict[str, Any]]:
    return [started(run_id, **start), *body, finished(run_id)]


def text(message_id: str, *deltas: str) -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, "role": "assistant"},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d} for d in deltas),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def replay(events: Iterable[Any], run_input: Any = None) -> tuple[Any, list[Any]]:
    """What a consumer makes of ``events``: the conversation and each run's outcome."""
    consumer = Consumer(run_input=run_input)
    consumer.feed_all(dump_event(e) if not isinstance(e, dict) else e for e in events)
    consumer.close()
    runs = [(r.run_id, r.status, r.error and r.error.message) for r in consumer.verifier.runs]
    return consumer.conversation.to_json(), runs


def wire(result: Compaction) -> list[dict[str, Any]]:
    return result.to_json()


def assert_equivalent(original: list[Any], result: Compaction, run_input: Any = None) -> None:
    want, got = replay(original, run_input), replay(result.events, run_input)
    assert same_json(want[0], got[0]), (want[0], got[0])
    assert want[1] == got[1]


# ---- streamed items ------------------------------------------------------------------------


def test_text_deltas_become_one_content_event() -> None:
    """The CONTENT deltas of one message are joined into one CONTENT before its END."""
    history = run("r1", *text("m1", "Hel", "lo, ", "world"))
    result = compact_events(history, verify=False)
    assert wire(result) == run(
        "r1",
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello, world"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    )
    assert_equivalent(history, result)


def test_a_whole_item_becomes_one_chunk_when_checked() -> None:
    """With verification on, an item closed by what follows it is written as one chunk."""
    history = run("r1", *text("m1", "Hel", "lo"))
    result = compact_events(history)
    assert wire(result) == run(
        "r1",
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "Hello"},
    )
    assert_equivalent(history, result)


def test_chunk_input_is_merged_into_one_chunk() -> None:
    """Several TEXT_MESSAGE_CHUNK events of one message become one."""
    history = run(
        "r1",
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "a"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "b"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "c"},
    )
    result = compact_events(history)
    assert wire(result) == run(
        "r1", {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "abc"}
    )
    assert_equivalent(history, result)


def test_delta_metadata_merges_in_order() -> None:
    """The merged CONTENT carries the deltas' metadata merged key by key, last write wins."""
    history = run(
        "r1",
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "metadata": {"x-a": 0}},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m1",
            "delta": "a",
            "metadata": {"x-a": 1, "x-b": 1},
        },
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "b", "metadata": {"x-a": 2}},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1", "metadata": {"x-c": 3}},
    )
    result = compact_events(history, verify=False)
    content = wire(result)[2]
    assert content == {
        "type": "TEXT_MESSAGE_CONTENT",
        "messageId": "m1",
        "delta": "ab",
        "metadata": {"x-a": 2, "x-b": 1},
    }
    assert_equivalent(history, result)
    conversation, _ = replay(result.events)
    assert conversation["messages"][0]["metadata"] == {"x-a": 2, "x-b": 1, "x-c": 3}


def test_tool_call_args_and_reasoning_deltas_merge() -> None:
    """TOOL_CALL_ARGS and REASONING_MESSAGE_CONTENT deltas are joined like text deltas."""
    history = run(
        "r1",
        {"type": "REASONING_MESSAGE_START", "messageId": "think", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "think", "delta": "hm"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "think", "delta": "m."},
        {"type": "REASONING_MESSAGE_END", "messageId": "think"},
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "search"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":'},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '"ag-ui"}'},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    )
    out = wire(compact_events(history, verify=False))
    assert {"type": "REASONING_MESSAGE_CONTENT", "messageId": "think", "delta": "hmm."} in out
    assert {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": '{"q":"ag-ui"}'} in out
    assert len(out) == 8
    assert_equivalent(history, compact_events(history))


def test_interleaved_messages_keep_their_order() -> None:
    """Two messages streamed at once keep their STARTs in place, so their order stays."""
    history = run(
        "r1",
        {"type": "TEXT_MESSAGE_START", "messageId": "a"},
        {"type": "TEXT_MESSAGE_START", "messageId": "b"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b", "delta": "b1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "a1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "b", "delta": "b2"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "a2"},
        {"type": "TEXT_MESSAGE_END", "messageId": "a"},
        {"type": "TEXT_MESSAGE_END", "messageId": "b"},
    )
    result = compact_events(history)
    conversation, _ = replay(result.events)
    assert [(m["id"], m["content"]) for m in conversation["messages"]] == [
        ("a", "a1a2"),
        ("b", "b1b2"),
    ]
    assert len(result.events) < len(history)
    assert_equivalent(history, result)


def test_events_that_close_no_lane_stay_after_the_chunk() -> None:
    """A RAW between an item's START and END stays, after the item's chunk."""
    history = run(
        "r1",
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "RAW", "event": {"beat": 1}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "x"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    )
    result = compact_events(history)
    assert wire(result) == run(
        "r1",
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant", "delta": "x"},
        {"type": "RAW", "event": {"beat": 1}},
    )
    assert_equivalent(history, result)


def test_messages_snapshot_is_a_barrier() -> None:
    """Deltas before a MESSAGES_SNAPSHOT are written before it (it may replace the message)."""
    history = run(
        "r1",
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "draft"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "m1", "role": "assistant", "content": "new "}],
        },
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "te"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "xt"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    )
    with pytest.raises(ProtocolError):  # the first START is still open: not a valid history
        compact_events(history)
    valid = [*history[:3], {"type": "TEXT_MESSAGE_END", "messageId": "m1"}, *history[3:]]
    result = compact_events(valid, verify=False)
    types = [e["type"] for e in wire(result)]
    assert types.index("TEXT_MESSAGE_CONTENT") < types.index("MESSAGES_SNAPSHOT")
    assert_equivalent(valid, result)
    assert replay(result.events)[0]["messages"][0]["content"] == "new text"


def test_run_error_flushes_open_items_and_fails_the_run() -> None:
    """Deltas of an item RUN_ERROR abandons are written before it; the run stays failed."""
    history = [
        started("r1"),
        *text("m1", "a", "b")[:-1],
        {"type": "RUN_ERROR", "message": "boom"},
    ]
    result = compact_events(history)
    assert wire(result)[-1] == {"type": "RUN_ERROR", "message": "boom"}
    assert replay(result.events)[1] == [("r1", "failed", "boom")]
    assert replay(result.events)[0]["messages"][0]["content"] == "ab"
    assert_equivalent(history, result)


# ---- state ---------------------------------------------------------------------------------


def test_state_deltas_collapse_into_a_snapshot() -> None:
    """A run's snapshot and deltas become one STATE_SNAPSHOT of the final state."""
    history = run(
        "r1",
        {"type": "STATE_SNAPSHOT", "snapshot": {"steps": []}},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/steps/-", "value": "a"}]},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/steps/-", "value": "b"}]},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/done", "value": True}]},
    )
    result = compact_events(history)
    assert wire(result) == run(
        "r1", {"type": "STATE_SNAPSHOT", "snapshot": {"steps": ["a", "b"], "done": True}}
    )
    assert_equivalent(history, result)


def test_state_collapses_into_a_delta_when_that_is_shorter() -> None:
    """Against a large baseline, one small change is written as one STATE_DELTA."""
    baseline = {
        "threadId": THREAD,
        "runId": "r1",
        "messages": [],
        "state": {"big": "x" * 400, "n": 1},
    }
    history = run(
        "r1",
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 3}]},
    )
    result = compact_events(history, run_input=baseline)
    joined = [
        {"op": "replace", "path": "/n", "value": 2},
        {"op": "replace", "path": "/n", "value": 3},
    ]
    assert wire(result) == run("r1", {"type": "STATE_DELTA", "delta": joined})
    assert_equivalent(history, result, baseline)


def test_state_events_that_change_nothing_are_dropped() -> None:
    """State events none of which changed the state (failing patches) are left out; the
    failures are in the diagnostics of the original."""
    history = run(
        "r1",
        {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]},
        {"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/x", "value": 1}]},
    )
    result = compact_events(history)
    assert wire(result) == run("r1")
    assert [d.code for d in result.diagnostics] == ["state.patch-failed"] * 2
    assert_equivalent(history, result)


def test_failing_deltas_are_left_out_of_the_joined_patch() -> None:
    """The joined STATE_DELTA holds only the operations of the deltas that applied."""
    baseline = {"threadId": THREAD, "runId": "r1", "messages": [], "state": {"big": "x" * 99}}
    history = run(
        "r1",
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
        {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/missing"}]},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 2}]},
    )
    result = compact_events(history, run_input=baseline)
    joined = [{"op": "add", "path": "/a", "value": 1}, {"op": "add", "path": "/b", "value": 2}]
    assert wire(result) == run("r1", {"type": "STATE_DELTA", "delta": joined})
    assert_equivalent(history, result, baseline)


def test_joined_patches_respect_the_per_patch_operation_limit() -> None:
    """Joining never makes a patch longer than a consumer accepts: a new one is begun."""
    from agentproto._core.patch.ops import DEFAULT_PATCH_LIMITS

    per_delta = DEFAULT_PATCH_LIMITS.max_operations // 2 + 1
    ops = [{"op": "add", "path": "/a", "value": i} for i in range(per_delta)]
    # a state far larger than the deltas, so that joining them is the shortest form
    big = {"big": "x" * 1_000_000}
    baseline = {"threadId": THREAD, "runId": "r1", "messages": [], "state": big}
    history = run("r1", *({"type": "STATE_DELTA", "delta": ops} for _ in range(3)))
    result = compact_events(history, run_input=baseline)
    sizes = [len(e["delta"]) for e in wire(result) if e["type"] == "STATE_DELTA"]
    assert sum(sizes) == 3 * per_delta
    assert all(size <= DEFAULT_PATCH_LIMITS.max_operations for size in sizes)
    assert_equivalent(history, result, baseline)


def test_one_state_event_is_kept_when_nothing_is_shorter() -> None:
    """A single delta shorter than a snapshot of the state it makes stays as it was; where
    the snapshot is shorter, the snapshot is written."""
    baseline = {"threadId": THREAD, "runId": "r1", "messages": [], "state": {"big": "x" * 99}}
    history = run("r1", {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]})
    assert wire(compact_events(history, run_input=baseline)) == history
    assert wire(compact_events(history)) == run(
        "r1", {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}}
    )


# ---- activities ----------------------------------------------------------------------------


def test_activity_deltas_collapse_into_one_snapshot() -> None:
    """An activity's snapshot and deltas become one ACTIVITY_SNAPSHOT at the snapshot's place."""
    history = run(
        "r1",
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "search",
         "content": {"n": 0}},
        *text("m1", "between"),
        {"type": "ACTIVITY_DELTA", "messageId": "act", "activityType": "search",
         "patch": [{"op": "replace", "path": "/n", "value": 1}]},
        {"type": "ACTIVITY_DELTA", "messageId": "act", "activityType": "found",
         "patch": [{"op": "add", "path": "/hits", "value": ["a"]}]},
    )  # fmt: skip
    result = compact_events(history)
    out = wire(result)
    assert out[1] == {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": "act",
        "activityType": "found",
        "content": {"n": 1, "hits": ["a"]},
    }
    assert [e["type"] for e in out].count("ACTIVITY_DELTA") == 0
    assert_equivalent(history, result)


def test_activity_events_without_a_target_are_dropped() -> None:
    """An ACTIVITY_DELTA for a missing activity changed nothing and is left out."""
    history = run(
        "r1",
        {"type": "ACTIVITY_DELTA", "messageId": "ghost", "activityType": "x",
         "patch": [{"op": "add", "path": "/a", "value": 1}]},
    )  # fmt: skip
    result = compact_events(history)
    assert wire(result) == run("r1")
    assert_equivalent(history, result)


def test_activity_with_several_owners_is_kept_as_it_was() -> None:
    """Activity events whose subagentRunId tags differ from the final owner stay as they were."""
    history = run(
        "r1",
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "t", "content": {"v": 0}},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "s1", "name": "helper"},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "act", "activityType": "t",
         "content": {"v": 1}, "subagentRunId": "s1"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "s1"},
    )  # fmt: skip
    result = compact_events(history)
    assert wire(result) == history
    assert_equivalent(history, result)


# ---- run boundaries, outcomes and input ----------------------------------------------------


def test_run_boundaries_outcomes_and_other_events_are_kept() -> None:
    """Outcomes, interrupts, late errors, steps, custom events and tool results stay."""
    interrupt = {"id": "i1", "reason": "approval"}
    history = [
        started("r1"),
        {"type": "STEP_STARTED", "stepName": "plan"},
        {"type": "CUSTOM", "name": "x-note", "value": {"k": 1}},
        {"type": "STEP_FINISHED", "stepName": "plan"},
        finished("r1", outcome={"type": "interrupt", "interrupts": [interrupt]}),
        started("r2"),
        {"type": "TOOL_CALL_RESULT", "messageId": "tm", "toolCallId": "c0", "content": "ok"},
        finished("r2"),
        {"type": "RUN_ERROR", "message": "late"},
    ]
    result = compact_events(history)
    assert wire(result) == history
    assert [r.status for r in result.runs] == ["interrupted", "failed"]
    assert_equivalent(history, result)


def test_run_input_loses_messages_the_conversation_holds() -> None:
    """RUN_STARTED.input.messages keeps only what the conversation does not hold already."""
    user = {"id": "u1", "role": "user", "content": "hi"}
    history = [
        *run("r1", *text("a1", "hello")),
        *run(
            "r2",
            input={
                "threadId": THREAD,
                "runId": "r2",
                "parentRunId": "r1",
                "messages": [
                    {"id": "a1", "role": "assistant", "content": "hello"},
                    {"id": "a1x", "role": "assistant", "content": "other"},
                    user,
                ],
            },
            parentRunId="r1",
        ),
    ]
    result = compact_events(history)
    second = next(e for e in wire(result) if e.get("runId") == "r2")
    assert second["parentRunId"] == "r1"
    assert second["input"]["parentRunId"] == "r1"
    assert [m["id"] for m in second["input"]["messages"]] == ["a1x", "u1"]


def test_typed_events_are_accepted() -> None:
    """compact_events takes typed events as well as wire JSON."""
    history = run("r1", *text("m1", "a", "b"))
    typed = [parse_event(e) for e in history]
    assert compact_events(typed).to_json() == compact_events(history).to_json()


# ---- bad input -----------------------------------------------------------------------------


def test_an_invalid_history_is_refused_with_the_consumers_error() -> None:
    """A history the consumer rejects is not compacted: its error is raised, noted."""
    history = run("r1", {"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"})
    with pytest.raises(ProtocolError) as info:
        compact_events(history)
    assert info.value.code == "message.not-open"
    assert any("event 1" in note for note in info.value.__notes__)


def test_a_history_ending_mid_run_is_refused() -> None:
    """A run left open at the end of the history has no outcome: the history is refused."""
    with pytest.raises(ProtocolError) as info:
        compact_events([started("r1"), *text("m1", "a")])
    assert any("not compacted" in note for note in info.value.__notes__)


def test_a_malformed_event_is_refused() -> None:
    """A known field with a wrong value is fatal, as for the consumer."""
    with pytest.raises(SchemaError):
        compact_events(run("r1", {"type": "TEXT_MESSAGE_START", "messageId": 7}))


def test_verification_failure_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the compacted history would replay differently, compaction fails loudly."""
    from agentproto.agui._history import compaction as _compaction

    def drop_everything(events: Any, reopened: Any) -> list[Any]:
        return []

    monkeypatch.setattr(_history, "chunk_form", drop_everything)
    monkeypatch.setattr(_compaction.RunCompactor, "take", lambda self: [])
    with pytest.raises(InternalError):
        compact_events(run("r1", *text("m1", "a")))


# ---- lineage and time travel ---------------------------------------------------------------


def _branched() -> list[dict[str, Any]]:
    """r1 → r2; r3 branches from r1; r4 continues r3."""
    return [
        *run("r1", *text("m1", "root"), {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}}),
        *run("r2", *text("m2", "main"),
             {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/n", "value": 2}]}),
        *run("r3", *text("m3", "alt"),
             {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/alt", "value": True}]},
             {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/b", "value": 1}]},
             parentRunId="r1"),
        *run("r4", *text("m4", "more")),
    ]  # fmt: skip


def test_lineage_parents_children_heads_and_paths() -> None:
    """parentRunId names a run's parent; without it the run continues the one before it."""
    history = History.from_json(_branched())
    assert [(r.run_id, r.parent_run_id) for r in history.runs] == [
        ("r1", None),
        ("r2", "r1"),
        ("r3", "r1"),
        ("r4", "r3"),
    ]
    assert [r.run_id for r in history.roots()] == ["r1"]
    assert [r.run_id for r in history.children("r1")] == ["r2", "r3"]
    assert [r.run_id for r in history.heads()] == ["r2", "r4"]
    assert [r.run_id for r in history.path("r4")] == ["r1", "r3", "r4"]
    assert history.run("r3").started.parent_run_id == "r1"


def test_time_travel_replays_only_the_branch() -> None:
    """The branch to a run replays to the conversation of the runs on its path."""
    branch = History.from_json(_branched()).branch("r4")
    conversation, runs = replay(branch.events)
    assert [m["content"] for m in conversation["messages"]] == ["root", "alt", "more"]
    assert conversation["state"] == {"n": 1, "alt": True, "b": 1}
    assert [r[0] for r in runs] == ["r1", "r3", "r4"]


def test_compaction_keeps_every_branch() -> None:
    """A run is compacted against its parent's conversation: each branch of the compacted
    history replays like the same branch of the original."""
    original = History.from_json(_branched())
    compacted = original.compact()
    assert len(compacted) < len(original)
    for head in ("r2", "r4"):
        want, got = replay(original.branch(head).events), replay(compacted.branch(head).events)
        assert same_json(want[0], got[0]) and want[1] == got[1]
    r3 = [dump_event(e) for e in compacted.run("r3").events]
    # r3's deltas apply to r1's state, not to r2's (recorded just before it)
    assert {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1, "alt": True, "b": 1}} in r3


def test_unknown_parent_makes_a_root_with_a_diagnostic() -> None:
    """A parentRunId naming no earlier run is tolerated: the run is a root, and said so."""
    history = History.from_json([*run("r1"), *run("r2", parentRunId="elsewhere")])
    assert history.run("r2").parent_run_id is None
    assert [d.code for d in history.diagnostics] == ["history.unknown-parent"]
    result = compact_events(history.to_json())
    assert [d.code for d in result.diagnostics][:1] == ["history.unknown-parent"]


def test_duplicate_run_ids_are_refused() -> None:
    """Two runs with one runId make lineage ambiguous: a ProtocolError."""
    with pytest.raises(ProtocolError) as info:
        History.from_json([*run("r1"), *run("r1")])
    assert info.value.code == "history.duplicate-run"
    with pytest.raises(ProtocolError):
        compact_events([*run("r1"), *run("r1")])


def test_no_such_run_is_a_usage_error() -> None:
    """Asking for a run the history does not hold is the caller's error."""
    with pytest.raises(UsageError):
        History.from_json(run("r1")).path("r9")


# ---- serialization -------------------------------------------------------------------------


def test_json_round_trip() -> None:
    """dumps then from_json gives back the same events; a prologue is kept apart."""
    events = [{"type": "RUN_ERROR", "message": "early"}, *_branched()]
    history = History.from_json(events)
    again = History.from_json(history.dumps())
    assert again.to_json() == events
    assert [dump_event(e) for e in again.prologue] == events[:1]
    assert len(again.runs) == 4


def test_from_json_errors() -> None:
    """Not JSON, not an array, or a bad event: the SDK's errors, with the event's index."""
    with pytest.raises(DecodeError):
        History.from_json(b"[{")
    with pytest.raises(SchemaError):
        History.from_json('{"type": "RUN_STARTED"}')
    with pytest.raises(SchemaError) as info:
        History.from_json([started("r1"), {"type": "TEXT_MESSAGE_START", "messageId": 1}])
    assert info.value.location.startswith("/1/")


def test_tolerant_from_json_reports_unknown_fields() -> None:
    """With a diagnostics list, unknown properties are stripped and reported."""
    found: list[Any] = []
    history = History.from_json(
        [started("r1", **{"x-extra": 1}), finished("r1")], diagnostics=found
    )
    assert "x-extra" not in history.to_json()[0]
    assert found


def test_history_takes_only_typed_events() -> None:
    """A History built from something that is not a typed event is a usage error."""
    with pytest.raises(UsageError):
        History([started("r1")])  # type: ignore[list-item]
    with pytest.raises(UsageError):
        History(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [None, 5, "[]", b"[]", {"type": "RUN_STARTED"}])
def test_compact_events_takes_an_iterable_of_events(bad: Any) -> None:
    """Something that is no iterable of events is the caller's error, not a TypeError."""
    with pytest.raises(UsageError) as info:
        compact_events(bad)
    assert info.value.code == "history.not-events"


def test_items_that_are_not_events_are_refused_like_the_consumer_does() -> None:
    """An item that is not a JSON object fails the history as a schema error."""
    with pytest.raises(SchemaError):
        compact_events([started("r1"), "not an event", finished("r1")])


# ---- chunk form, fallback, a bundled recording, random histories ---------------------------


def test_a_message_and_the_tool_call_it_parents_both_become_chunks() -> None:
    """A tool call naming its parent message is in that message's lane: it closes it."""
    history = run(
        "r1",
        *text("m1", "Let me ", "look."),
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "f",
            "parentMessageId": "m1",
        },
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{}"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
    )
    result = compact_events(history)
    assert wire(result) == run(
        "r1",
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m1", "role": "assistant",
         "delta": "Let me look."},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f",
         "parentMessageId": "m1", "delta": "{}"},
    )  # fmt: skip
    assert_equivalent(history, result)


def test_a_chunk_form_that_replays_differently_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the chunk form fails the replay check, the explicit (checked) form is returned."""

    def lossy(events: Any, reopened: Any) -> list[Any]:
        return [e for e in events if e.type != "TEXT_MESSAGE_CONTENT"]

    monkeypatch.setattr(_history, "chunk_form", lossy)
    history = run("r1", *text("m1", "a", "b"))
    assert wire(compact_events(history)) == wire(compact_events(history, verify=False))
    assert_equivalent(history, compact_events(history))


def test_the_bundled_recording_compacts() -> None:
    """The example SSE recording the CLI replays compacts to fewer bytes, equivalently."""
    from importlib import resources

    from agentproto.cli.agui import EXAMPLE

    data = resources.files("agentproto.cli").joinpath("data").joinpath(EXAMPLE)
    sse = data.read_text(encoding="utf-8")
    history = [json.loads(line[6:]) for line in sse.splitlines() if line.startswith("data: ")]
    result = compact_events(history)
    assert len(json.dumps(result.to_json())) < len(json.dumps(history))
    assert_equivalent(history, result)


@st.composite
def interleaved(draw: st.DrawFn, sequences: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The sequences merged in a random order that keeps each one's own order."""
    queues = [list(seq) for seq in sequences if seq]
    out = []
    while queues:
        queue = draw(st.sampled_from(queues))
        out.append(queue.pop(0))
        if not queue:
            queues.remove(queue)
    return out


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Runs of interleaved messages, tool calls, state deltas, activities and RAW events."""
    events: list[dict[str, Any]] = []
    pieces = st.text(alphabet="ab é😀", min_size=1, max_size=3)
    for r in range(draw(st.integers(1, 3))):
        body = [
            text(f"r{r}m{m}", *draw(st.lists(pieces, max_size=3)))
            for m in range(draw(st.integers(0, 3)))
        ]
        for c in range(draw(st.integers(0, 2))):
            call = f"r{r}c{c}"
            body.append(
                [
                    {"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": "f"},
                    *(
                        {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": d}
                        for d in draw(st.lists(pieces, max_size=3))
                    ),
                    {"type": "TOOL_CALL_END", "toolCallId": call},
                ]
            )
        keys = draw(st.lists(st.sampled_from("xyz"), max_size=4))
        body.append(
            [
                {"type": "STATE_DELTA", "delta": [{"op": "add", "path": f"/{k}", "value": i}]}
                for i, k in enumerate(keys)
            ]
        )
        if draw(st.booleans()):
            act = f"r{r}act"
            body.append(
                [
                    {
                        "type": "ACTIVITY_SNAPSHOT",
                        "messageId": act,
                        "activityType": "t",
                        "content": {"n": 0},
                    },
                    *(
                        {
                            "type": "ACTIVITY_DELTA",
                            "messageId": act,
                            "activityType": "t",
                            "patch": [{"op": "replace", "path": "/n", "value": i}],
                        }
                        for i in range(draw(st.integers(0, 3)))
                    ),
                ]
            )
        body.append([{"type": "RAW", "event": i} for i in range(draw(st.integers(0, 2)))])
        events += run(f"r{r}", *draw(interleaved(body)))
    return events  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(histories())
def test_random_histories_compact_equivalently(history: list[dict[str, Any]]) -> None:
    """Any interleaving compacts to a history no longer than the original that replays the
    same, in the explicit form and in the chunk form alike."""
    explicit = compact_events(history, verify=False)
    assert_equivalent(history, explicit)
    chunked = _compaction.chunk_form(explicit.events, _compaction.starts_twice(explicit.events))
    assert_equivalent(history, Compaction(events=tuple(chunked)))
    assert len(chunked) <= len(explicit.events) <= len(history)
    assert len(compact_events(history).events) == len(chunked)


# ---- the documented example ---------------------------------------------------------------------


def test_guide_example_runs_as_written() -> None:
    """The client authors' guide's serialization and compaction example runs, and
    says what it shows."""
    namespace = run_doc_block("docs/guides/client-authors.md", "Serialization and compaction")
    compacted, history = namespace["compacted"], namespace["history"]
    assert compacted.to_json()[1] == {
        "type": "TEXT_MESSAGE_CHUNK",
        "messageId": "m1",
        "role": "assistant",
        "delta": "Hello",
    }
    assert compacted.to_json()[2] == {"type": "STATE_SNAPSHOT", "snapshot": {"n": 1}}
    assert [run.run_id for run in history.heads()] == ["r2", "r3"]
    assert [run.run_id for run in history.path("r3")] == ["r1", "r3"]
    branch = [dump_event(e) for e in history.branch("r3").events]
    assert [e.get("runId") for e in branch if e["type"] == "RUN_STARTED"] == ["r1", "r3"]
    assert_equivalent(namespace["recorded"], compacted)
