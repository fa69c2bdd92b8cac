"""Bounded growth: state and activity content under many deltas, and the diagnostics kept."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import orjson

from agentproto.acp import SessionStore
from agentproto.agui import Consumer

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
MB = 1 << 20


def _deltas(consumer: Consumer, ops: list[dict[str, Any]], times: int) -> list[str]:
    codes = []
    for _ in range(times):
        before = len(consumer.diagnostics)
        consumer.feed_json({"type": "STATE_DELTA", "delta": ops})
        codes += [d.code for d in consumer.diagnostics[before:]]
    return codes


def test_doubling_copies_stop_at_max_state_nodes() -> None:
    """Repeated copy deltas that double the state fail atomically at max_state_nodes."""
    consumer = Consumer(max_state_nodes=5_000)
    consumer.feed_json(START)
    consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"g": [0]}})
    for n in range(20):
        copy = {"op": "copy", "from": "" if n else "/g", "path": f"/h{n}"}
        consumer.feed_json({"type": "STATE_DELTA", "delta": [copy]})
    failed = [d for d in consumer.diagnostics if d.code == "state.patch-failed"]
    assert failed and "max_state_nodes=5000" in failed[0].message
    assert len(orjson.dumps(consumer.conversation.state_json())) < 5_000 * 8
    assert consumer.failure is None


def test_replace_and_remove_are_credited() -> None:
    """A state patched in place for ever (replace, add then remove) never reaches the limit."""
    consumer = Consumer(max_state_nodes=50)
    consumer.feed_json(START)
    consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1, "b": [1, 2]}})
    codes = _deltas(consumer, [{"op": "replace", "path": "/a", "value": 2}], 500)
    codes += _deltas(consumer, [{"op": "replace", "path": "/b", "value": [3, 4]}], 500)
    codes += _deltas(
        consumer,
        [{"op": "add", "path": "/c", "value": [1, 2, 3]}, {"op": "remove", "path": "/c"}],
        500,
    )
    codes += _deltas(consumer, [{"op": "add", "path": "/a", "value": {"x": 1}}], 500)
    assert codes == []
    assert consumer.conversation.state_json() == {"a": {"x": 1}, "b": [3, 4]}


def test_activity_content_is_bounded() -> None:
    """ACTIVITY_DELTA growth stops at max_activity_nodes; the activity keeps its content."""
    consumer = Consumer(max_activity_nodes=100)
    consumer.feed_json(START)
    consumer.feed_json(
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "x", "content": {"g": [0]}}
    )
    for n in range(10):
        consumer.feed_json(
            {
                "type": "ACTIVITY_DELTA",
                "messageId": "a",
                "activityType": "x",
                "patch": [
                    {"op": "copy", "from": "/g", "path": f"/g{n}"},
                    {"op": "add", "path": f"/g{n}/-", "value": [0] * 10},
                ],
            }
        )
    failed = [d for d in consumer.diagnostics if d.code == "activity.patch-failed"]
    assert failed and "max_activity_nodes=100" in failed[0].message
    content = consumer.conversation.activities[0].content
    assert 0 < len(orjson.dumps(dict(content))) < 100 * 8


def test_consumer_keeps_at_most_max_diagnostics() -> None:
    """Past max_diagnostics, one diagnostics-limit entry counts the rest."""
    consumer = Consumer(max_diagnostics=5)
    consumer.feed_json(START)
    for n in range(20):
        consumer.feed_json({"type": "FUTURE_EVENT", "n": n})
    assert len(consumer.diagnostics) == 6
    assert consumer.diagnostics[-1].code == "diagnostics-limit"
    assert "15 more" in consumer.diagnostics[-1].message


def test_session_store_keeps_at_most_max_diagnostics() -> None:
    """SessionStore's diagnostics are capped the same way."""
    store = SessionStore(max_diagnostics=3)
    line = b'{"jsonrpc":"2.0","method":"other/thing","params":{}}\n'
    store.feed(line * 10)
    store.close()
    assert len(store.diagnostics) == 4
    assert store.diagnostics[-1].code == "diagnostics-limit"


def test_default_limit_stops_doubling_growth() -> None:
    """With the defaults, 30 doubling deltas (about 2 KB) leave the state under 250,000 values."""
    from agentproto._core.patch.ops import NodeCount

    consumer = Consumer()
    consumer.feed_json(START)
    consumer.feed_json({"type": "STATE_SNAPSHOT", "snapshot": {"g": [0]}})
    for n in range(30):
        copy = {"op": "copy", "from": "", "path": f"/h{n}"}
        consumer.feed_json({"type": "STATE_DELTA", "delta": [copy]})
    assert NodeCount.measure(consumer.conversation.state_json()) <= 250_000
    assert any("max_state_nodes=250000" in d.message for d in consumer.diagnostics)


def _traced_peak(run: Callable[[], Any]) -> int:
    """The peak of traced memory, in bytes above what was held at the start, during ``run()``."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        run()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_patch_over_max_operations_is_refused_without_growing_memory() -> None:
    """A 300,000-operation STATE_DELTA (over max_operations) is refused with a warning, its
    memory bounded: from Python, well below the size of the operations as dicts (it peaked
    near 300 MB, most of it the depth scan's pieces and the copied operations); from bytes,
    little above what parsing the line costs (orjson's own peak)."""
    ops = [{"op": "add", "path": f"/k{i}", "value": i} for i in range(300_000)]
    event = {"type": "STATE_DELTA", "delta": ops}
    line = orjson.dumps(event) + b"\n"
    start = orjson.dumps(START) + b"\n"
    for feed, data, bound in [
        ("feed_json", event, 100 * MB),
        ("feed_bytes", line, _traced_peak(lambda: orjson.loads(line)) + 40 * MB),
    ]:
        consumer = Consumer(transport="jsonl")
        consumer.feed_bytes(start)
        peak = _traced_peak(lambda: getattr(consumer, feed)(data))  # noqa: B023
        assert [d.code for d in consumer.diagnostics] == ["state.patch-failed"]
        assert "max_operations" in consumer.diagnostics[0].message
        assert consumer.conversation.state_json() == {}
        assert peak < bound, (feed, peak / MB, bound / MB)
