"""Bounded growth: state and activity content under many deltas, and the diagnostics kept."""

from __future__ import annotations

from typing import Any

import orjson

from agentproto.acp import SessionStore
from agentproto.agui import Consumer

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


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
