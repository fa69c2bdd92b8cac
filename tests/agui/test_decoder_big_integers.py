"""Integers beyond 64 bits stay exact through ``EventDecoder.feed_bytes``, whichever way
the build keeps them: the interpreted build scans each chunk's bytes for a run of 19
digits, the compiled one walks the parsed values for the floats orjson makes of such
integers (``_decoder._WALK_VALUES``).

Both ways are run here by switching that flag; compiled, the decoder reads its own
constant, so both parameters run the compiled way there.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentproto import AgentProtoError
from agentproto._core.jsonutil import dumps
from agentproto.agui import EventDecoder
from agentproto.agui import _decoder as decoder_module


@pytest.fixture(params=["scan", "walk"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(decoder_module, "_WALK_VALUES", request.param == "walk")
    return str(request.param)


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
def test_integers_at_and_past_64_bits_stay_exact(way: str, step: int | None) -> None:
    """Each edge value, nested in a list and in an object, in whole and split chunks."""
    metadata = {"list": EDGES, "nested": {"n": EDGES[-1]}, "plain": 5}
    events = _decode(_sse([_content({"x": 1}), _content(metadata), _content({"y": 2})]), step)
    assert [e.metadata for e in events] == [{"x": 1}, metadata, {"y": 2}]
    assert all(type(n) is int for n in events[1].metadata["list"])


def test_large_floats_stay_floats(way: str) -> None:
    """A float of 2**63 or more is parsed again, and is still the same float."""
    metadata = {"f": 1e19, "g": -1.5e300, "h": 9.3e18}
    (event,) = _decode(_sse([_content(metadata)]))
    assert event.metadata == metadata
    assert all(type(v) is float for v in event.metadata.values())


def test_an_integer_past_the_digit_limit_fails_the_same_way(way: str) -> None:
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
def test_both_ways_decode_alike(metadatas: list[dict[str, Any]], step: int) -> None:
    """Random numbers in random chunking: both ways give the exact values."""
    data = _sse([_content(m) for m in metadatas])
    results = []
    for walk in (False, True):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(decoder_module, "_WALK_VALUES", walk)
            results.append([e.metadata for e in _decode(data, step)])
    assert results[0] == results[1] == metadatas
    assert [type(v) for m in results[1] for v in m.values()] == [
        type(v) for m in metadatas for v in m.values()
    ]
