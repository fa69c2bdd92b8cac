"""Integers beyond 64 bits stay exact through ``EventDecoder.feed_bytes``: the decoder
looks for the floats orjson makes of them, only where an event its type's loader
accepted can hold a number, and in the whole of any event that takes the general way,
and parses a document holding one again, exactly.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import AgentProtoError, DecodeError
from agentproto._core.json.codec import dumps
from agentproto.agui import EventDecoder
from agentproto.agui._consume import decoder as decoder_module
from agentproto.agui._generated import AddOperation
from agentproto.agui._protocol.wire import CONVERTER, EVENT_NUMBER_MEMBERS
from tests.benchmarks.builds import build_of


def _content(metadata: Any) -> dict[str, Any]:
    return {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d", "metadata": metadata}


def _sse(events: list[Any]) -> bytes:
    return b"".join(b"data: " + dumps(e) + b"\n\n" for e in events)


def _decode(data: bytes, step: int | None = None) -> list[Any]:
    decoder = EventDecoder()
    size = step or len(data) or 1
    events = [e for i in range(0, len(data), size) for e in decoder.feed_bytes(data[i : i + size])]
    return events + decoder.close()


EDGES = [2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1, 10**25, -(10**40)]


@pytest.mark.parametrize("step", [None, 1, 7])
def test_integers_at_and_past_64_bits_stay_exact(step: int | None) -> None:
    """Each edge value, nested in a list and in an object, in whole and split chunks."""
    metadata = {"list": EDGES, "nested": {"n": EDGES[-1]}, "plain": 5}
    events = _decode(_sse([_content({"x": 1}), _content(metadata), _content({"y": 2})]), step)
    assert [e.metadata for e in events] == [{"x": 1}, metadata, {"y": 2}]
    assert all(type(n) is int for n in events[1].metadata["list"])


def test_large_floats_stay_floats() -> None:
    """A float of 2**63 or more is parsed again, and is still the same float."""
    metadata = {"f": 1e19, "g": -1.5e300, "h": 9.3e18}
    (event,) = _decode(_sse([_content(metadata)]))
    assert event.metadata == metadata
    assert all(type(v) is float for v in event.metadata.values())


def test_an_integer_past_the_digit_limit_fails_the_same_way() -> None:
    """Too many digits for Python's int(): the error names the event and its offset."""
    data = _sse([_content({"x": 1})]) + b'data: {"type":"RAW","event":' + b"9" * 5000 + b"}\n\n"
    decoder = EventDecoder()
    assert len(decoder.feed_bytes(data)) == 1
    with pytest.raises(AgentProtoError) as info:
        decoder.feed_bytes(b"")
    assert "event 1" in str(info.value)
    assert getattr(info.value, "offset", None) == len(_sse([_content({"x": 1})]))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from("abc"),
            st.integers(-(2**80), 2**80) | st.floats(allow_nan=False, allow_infinity=False),
            max_size=3,
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 64),
)
def test_random_numbers_decode_exactly(metadatas: list[dict[str, Any]], step: int) -> None:
    """Random numbers in random chunking: the exact values, of the same types."""
    decoded = [e.metadata for e in _decode(_sse([_content(m) for m in metadatas]), step)]
    assert decoded == metadatas
    assert [type(v) for m in decoded for v in m.values()] == [
        type(v) for m in metadatas for v in m.values()
    ]


BIG = 123456789012345678901234  # orjson makes 1.2345678901234568e+23 of it


def _failure(event: bytes) -> str:
    decoder = EventDecoder()
    with pytest.raises(AgentProtoError) as info:
        decoder.feed_bytes(_sse([_content({"x": 1})]) + b"data: " + event + b"\n\n")
        decoder.feed_bytes(b"")
    return str(info.value)


@pytest.mark.parametrize(
    "event",
    [
        # refused by its type's loader, so never delivered: the error shows the exact value
        b'{"type":"REASONING_MESSAGE_START","messageId":"m","role":%d}' % BIG,
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d","timestamp":%d}' % BIG,
        b'{"type":%d}' % BIG,
    ],
    ids=["string-constant", "bounded-integer", "event-type"],
)
def test_a_refused_event_is_reported_with_its_exact_integer(event: bytes) -> None:
    assert str(BIG) in _failure(event)


def test_an_unknown_member_stripped_keeps_the_other_numbers_exact() -> None:
    """An event its loader reports something of takes the general way: parsed again."""
    metadata = {"n": BIG}
    event = {**_content(metadata), "unknownMember": BIG}
    decoder = EventDecoder()
    (decoded,) = decoder.feed_bytes(_sse([event]))
    assert decoded.metadata == metadata
    assert [d.code for d in decoder.diagnostics] == ["unknown-field"]


def test_required_members_only_and_numbers_in_the_members_that_can_hold_them() -> None:
    """An event with only its (string) required members is delivered as it came; one
    with a number where its type allows one (a patch value) keeps it exact."""
    delta = {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/n", "value": BIG}]}
    content = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "d"}
    first, second = _decode(_sse([content, delta]))
    assert (first.message_id, first.delta, first.metadata) == ("m", "d", None)
    assert second.delta[0].value == BIG and type(second.delta[0].value) is int


def test_where_an_accepted_event_can_hold_a_number() -> None:
    """Read off the schema: TEXT_MESSAGE_CONTENT's required members are strings and its
    timestamp is bounded within 2**53, so only its free-form members can; STATE_DELTA's
    required patch can; a JSON Patch operation keeps members it does not know."""
    assert EVENT_NUMBER_MEMBERS["TEXT_MESSAGE_CONTENT"] == (3, ("rawEvent", "metadata"))
    assert EVENT_NUMBER_MEMBERS["STATE_DELTA"] == (-1, ("delta", "rawEvent", "metadata"))
    assert CONVERTER.number_members(AddOperation) == (-1, None)


@pytest.mark.skipif(
    build_of() == "compiled",
    reason="compiled, the decoder calls the compiled loads directly, so the failure cannot be"
    " put in its place (no input makes the exact parse refuse what orjson read: orjson refuses"
    " numbers of over 308 digits, int() only those of over 4300); the pure run checks it",
)
def test_a_document_its_exact_parse_refuses_is_located(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should the exact parse of a document orjson read fail, the error names the event
    and the offset of its frame, as when the chunk is taken event by event; the events
    before it are delivered."""

    def refuse(text: str, **options: Any) -> Any:
        raise DecodeError("refused", offset=0)

    monkeypatch.setattr(decoder_module, "loads", refuse)
    first = _sse([_content({"x": 1})])
    decoder = EventDecoder()
    assert len(decoder.feed_bytes(first + _sse([_content({"n": BIG})]))) == 1
    with pytest.raises(DecodeError) as info:
        decoder.feed_bytes(b"")
    assert str(info.value).startswith("event 1: refused")
    assert info.value.offset == len(first)
