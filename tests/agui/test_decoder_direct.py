"""The decoder's short way: common events go straight to their type's loader, and
whatever takes it behaves exactly as the general way (boundary, middleware, the
event union's loader) would have behaved."""

from __future__ import annotations

from typing import Any

import pytest

from agentproto import DecodeError, SchemaError
from agentproto._core.json.codec import dumps, loads
from agentproto.agui import EventDecoder
from agentproto.agui._consume import decoder as decoder_module

PLAIN = [
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "hi"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
]


def _sse(events: list[Any]) -> bytes:
    return b"".join(b"data: " + dumps(e) + b"\n\n" for e in events)


class _Counting:
    """Counts the calls of the event union's loader (the general way)."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        self.calls += 1
        return self.real(*args)


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> _Counting:
    counting = _Counting(decoder_module.load_event)
    monkeypatch.setattr(decoder_module, "load_event", counting)
    return counting


def _outcome(decoder: EventDecoder, data: bytes, *, step: int | None = None) -> Any:
    """Events (as reprs), diagnostics and the error, feeding ``data`` whole or in steps."""
    events: list[Any] = []
    error = None
    step = step or len(data) or 1
    try:
        for start in range(0, len(data), step):
            events += decoder.feed_bytes(data[start : start + step])
        events += decoder.close()
    except (SchemaError, DecodeError) as exc:
        error = (type(exc).__name__, str(exc))
        events += []
    return [repr(e) for e in events], [repr(d) for d in decoder.diagnostics], error


def test_common_events_skip_the_general_way(general: _Counting) -> None:
    """Known, current events without the every-event field take no general step."""
    events = EventDecoder().feed_bytes(_sse(PLAIN * 3))
    assert len(events) == 9
    assert general.calls == 0


def test_boundary_kinds_and_every_event_field_take_the_general_way(general: _Counting) -> None:
    """An event the boundary may change, or one holding its every-event field, is not direct."""
    run_started = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    raw = {"type": "TEXT_MESSAGE_END", "messageId": "m1", "rawEvent": {"x": 1}}
    events = EventDecoder().feed_bytes(_sse([run_started, *PLAIN, raw]))
    assert len(events) == 5
    assert general.calls == 2


def test_middleware_takes_the_general_way(general: _Counting) -> None:
    """With middleware every event is seen by it, so none goes the short way."""
    seen: list[str] = []

    def hook(event: dict[str, Any]) -> dict[str, Any]:
        seen.append(event["type"])
        return event

    EventDecoder(middleware=[hook]).feed_bytes(_sse(PLAIN))
    assert seen == [e["type"] for e in PLAIN]
    assert general.calls == 3


# Each stream mixes events the short way takes with ones it must hand back.
STREAMS = {
    "unknown field": [*PLAIN[:1], {**PLAIN[1], "extra": 1}, PLAIN[2]],
    "unknown type": [PLAIN[0], {"type": "NOT_A_TYPE", "x": 1}, PLAIN[1]],
    "bad value": [PLAIN[0], {**PLAIN[1], "delta": 5}, PLAIN[2]],
    "missing member": [PLAIN[0], {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1"}],
    "not an object": [PLAIN[0], [1, 2], PLAIN[1]],
    "tag not a string": [PLAIN[0], {"type": ["TEXT_MESSAGE_END"], "messageId": "m"}],
    "unknown enum value": [{**PLAIN[0], "role": "narrator"}, PLAIN[1]],
    "big integer": [{**PLAIN[1], "timestamp": 10**25}, PLAIN[2]],
    "long event": [PLAIN[0], {**PLAIN[1], "delta": "x" * 5000}, PLAIN[2]],
}


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_short_way_gives_what_the_general_way_gives(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events, diagnostics (with their index) and errors are those of the general way."""
    data = _sse(STREAMS[name])
    short = [_outcome(EventDecoder(), data, step=step) for step in (None, 7)]
    monkeypatch.setattr(EventDecoder, "_enforce", _general_only)
    general = [_outcome(EventDecoder(), data, step=step) for step in (None, 7)]
    assert short == general
    assert short[0] == short[1]


def _general_only(
    self: EventDecoder,
    values: list[Any],
    delivered: list[Any],
    texts: list[str] | None = None,
    frames: Any = None,
) -> None:
    """Each event the general way, from its document parsed exactly."""
    exact = values if texts is None else [loads(text) for text in texts]
    for value in exact:
        self._process(value, delivered)


def test_diagnostics_of_a_direct_event_carry_its_index() -> None:
    """An unknown field of the third event is reported at index 2, with its path."""
    decoder = EventDecoder()
    decoder.feed_bytes(_sse([PLAIN[0], PLAIN[1], {**PLAIN[2], "extra": 1}]))
    assert [(d.code, d.index, d.path) for d in decoder.diagnostics] == [
        ("unknown-field", 2, "/extra")
    ]


def test_a_stream_event_problem_carries_its_index_not_a_line() -> None:
    """A diagnostic about an event of a stream carries its 0-based ``index`` and no ``line``,
    in JSON Lines too (where a blank line would make the two differ)."""
    decoder = EventDecoder(transport="jsonl")
    decoder.feed_bytes(dumps(PLAIN[0]) + b"\n\n" + dumps({**PLAIN[1], "extra": 1}) + b"\n")
    assert [(d.code, d.index, d.line) for d in decoder.diagnostics] == [("unknown-field", 1, None)]


def test_error_names_the_event_index() -> None:
    """A malformed value in the second event of a chunk names event 1; the first is delivered."""
    decoder = EventDecoder()
    events = decoder.feed_bytes(_sse([PLAIN[0], {**PLAIN[1], "delta": 5}]))
    assert len(events) == 1
    with pytest.raises(SchemaError, match=r"event 1 \('TEXT_MESSAGE_CONTENT'\)"):
        decoder.feed_bytes(b"")


def test_a_big_integer_stays_exact_next_to_plain_events() -> None:
    """In a chunk with one 25-digit integer, that event is parsed exactly and the rest too."""
    meta = {"n": 10**25}
    events = EventDecoder().feed_bytes(_sse([PLAIN[0], {**PLAIN[1], "metadata": meta}]))
    assert events[1].metadata == {"n": 10**25}
    assert isinstance(events[1].metadata["n"], int)
