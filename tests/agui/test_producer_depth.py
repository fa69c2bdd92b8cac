"""The producer and deep values: an SDK error or a delta the consumer takes, never a crash.

jsonpatch's diff recurses once per level, so a state near the depth limit used to
end ``state_update`` with a ``RecursionError`` (and an agent served by
``agent_app`` with ``RUN_ERROR`` "the agent failed (RecursionError)").
"""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import AgentProtoError, DecodeError
from agentproto._core.json.codec import DEFAULT_MAX_DEPTH
from agentproto._core.patch.apply import apply_patch, make_patch
from agentproto.agui import Consumer, RunProducer, make_converter


def _nest(levels: int, leaf: Any = None) -> Any:
    value: Any = {} if leaf is None else leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def _started(state: Any = None) -> tuple[RunProducer, list[Any]]:
    sent: list[Any] = []
    producer = RunProducer(sink=sent.append)
    producer.run_started(thread_id="t", run_id="r")
    producer.state_snapshot({} if state is None else state)
    return producer, sent


def _client_state(sent: list[Any]) -> Any:
    """The state a consumer holds after the events sent, given to it as wire JSON."""
    converter = make_converter()
    consumer = Consumer()
    for event in sent:
        consumer.feed_json(converter.dump(event))
    assert consumer.failure is None
    return consumer.conversation.state_json()


@pytest.mark.parametrize("levels", [480, 495, 500, 505, 509, 510, 511, 512, 600, 3000])
def test_state_update_of_a_deep_state(levels: int) -> None:
    producer, sent = _started()
    target = _nest(levels)
    try:
        producer.state_update(target)
    except AgentProtoError as error:
        # refused only when the delta event would be deeper than a consumer accepts
        assert levels + 3 > DEFAULT_MAX_DEPTH, error
        assert isinstance(error, DecodeError)
        assert "max_depth" in str(error)
        assert len(str(error)) < 400
        assert len(sent) == 2  # nothing sent
        return
    assert _client_state(sent) == target


def test_state_update_from_a_deep_state_to_a_changed_one() -> None:
    producer, sent = _started(_nest(500, {"x": 1}))
    producer.state_update(_nest(500, {"x": 2}))
    assert _client_state(sent) == _nest(500, {"x": 2})
    assert producer.state_update(_nest(500, {"x": 2})) is None  # already equal: nothing sent


def test_activity_update_with_deep_content() -> None:
    producer, sent = _started()
    producer.activity_snapshot("act", "progress", {"v": 1})
    producer.activity_update("act", {"v": _nest(495)})
    _client_state(sent)  # a consumer takes every event sent
    with pytest.raises(DecodeError, match="max_depth"):
        producer.activity_update("act", {"v": _nest(900)})


def test_make_patch_of_deep_documents_replaces_the_whole() -> None:
    old, new = _nest(505, {"x": 1}), _nest(505, {"x": 2})
    ops = make_patch(old, new)
    assert ops == [{"op": "replace", "path": "", "value": new}]
    assert apply_patch(old, ops) == new
    assert make_patch(old, _nest(505, {"x": 1})) == []
    assert make_patch({"a": 1}, {"a": 2}) == [{"op": "replace", "path": "/a", "value": 2}]
