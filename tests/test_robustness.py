"""Never a bare exception: mutated and garbage input only ever raises AgentProtoError.

Hypothesis takes real documents (the AG-UI conformance streams, our ACP round-trip
corpus), replaces one value at a random place with random JSON, or cuts the bytes,
and feeds the result through the public entry points. Whatever happens, the only
exceptions allowed are the SDK's own.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentproto import AgentProtoError
from agentproto._core.sse import encode_sse
from agentproto.acp import SessionStore, parse_session_update
from agentproto.agui import Consumer, parse_event
from tests.needs import find_spec

CORPUS = "agui/draft/conformance/streams"
_SPEC = find_spec(CORPUS)  # without it, the tests of the streams skip (marked below)
STREAMS = [
    json.loads(p.read_text(encoding="utf-8"))["stream"]
    for p in (sorted((_SPEC / CORPUS).glob("*.json")) if _SPEC is not None else [])
]
UPDATES = [
    json.loads(p.read_text(encoding="utf-8"))
    for p in sorted((Path(__file__).parent / "acp" / "roundtrip").glob("*.json"))
]

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _places(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    places = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            places += _places(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            places += _places(item, (*path, index))
    return places


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


@st.composite
def mutated(draw: st.DrawFn, documents: list[Any]) -> Any:
    document = draw(st.sampled_from(documents))
    path = draw(st.sampled_from(_places(document)))
    return _replace(document, path, draw(json_values))


def _feed(events: Any) -> None:
    consumer = Consumer()
    with contextlib.suppress(AgentProtoError):
        consumer.feed_all(events if isinstance(events, list) else [events])
        consumer.close()


@pytest.mark.spec(CORPUS)
@SETTINGS
@given(mutated(STREAMS))
def test_mutated_agui_streams_raise_only_sdk_errors(stream: Any) -> None:
    """A conformance stream with one value replaced by random JSON never crashes the consumer."""
    _feed(stream)
    for event in stream if isinstance(stream, list) else [stream]:
        with contextlib.suppress(AgentProtoError):
            parse_event(event)
        with contextlib.suppress(AgentProtoError):
            parse_event(event, diagnostics=[])


@pytest.mark.spec(CORPUS)
@SETTINGS
@given(st.sampled_from(STREAMS), st.data())
def test_cut_and_flipped_sse_bytes_raise_only_sdk_errors(stream: Any, data: st.DataObject) -> None:
    """SSE bytes cut short or with one byte changed never crash the consumer."""
    raw = b"".join(encode_sse(orjson.dumps(e)) for e in stream)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    at = data.draw(st.integers(min_value=0, max_value=max(0, cut - 1)))
    byte = data.draw(st.integers(min_value=0, max_value=255))
    bad = raw[:cut] if not cut else raw[:at] + bytes([byte]) + raw[at + 1 : cut]
    consumer = Consumer()
    with contextlib.suppress(AgentProtoError):
        consumer.feed_bytes(bad)
        consumer.close()


@SETTINGS
@given(mutated(UPDATES))
def test_mutated_acp_updates_raise_only_sdk_errors(update: Any) -> None:
    """An ACP update with one value replaced by random JSON never crashes parsing or state."""
    for diagnostics in (None, []):
        with contextlib.suppress(AgentProtoError):
            parse_session_update(update, diagnostics=diagnostics)
    store = SessionStore()
    line = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": "s", "update": update},
    }
    try:
        store.feed(orjson.dumps(line, option=orjson.OPT_PASSTHROUGH_SUBCLASS) + b"\n")
    except (AgentProtoError, TypeError) as exc:  # TypeError only from orjson (big ints)
        assert isinstance(exc, AgentProtoError) or "Integer exceeds" in str(exc)
