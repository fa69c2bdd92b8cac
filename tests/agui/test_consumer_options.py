"""The Consumer passes its decoder options on to its EventDecoder unchanged."""

from __future__ import annotations

import inspect
import typing

import orjson
import pytest

from agentproto import DecodeError, UsageError
from agentproto.agui import Consumer, DecoderOptions, EventDecoder
from tests.benchmarks.builds import build_of

START = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}


@pytest.mark.skipif(
    build_of() == "compiled",
    reason="a compiled EventDecoder has no introspectable signature; the pure run checks it",
)
def test_decoder_options_are_the_decoder_keywords_the_consumer_leaves_open() -> None:
    """DecoderOptions names every EventDecoder keyword the Consumer does not set itself,
    with the decoder's own types."""
    own = {"max_depth", "max_diagnostics", "next_stage", "on_failure"}
    keywords = set(inspect.signature(EventDecoder).parameters) - own
    hints = typing.get_type_hints(DecoderOptions)
    assert set(hints) == keywords
    decoder_hints = typing.get_type_hints(EventDecoder.__init__)
    assert all(hints[name] == decoder_hints[name] for name in keywords)


def test_options_reach_the_decoder() -> None:
    """transport and max_event_bytes given to the Consumer frame its bytes."""
    consumer = Consumer(transport="jsonl", max_event_bytes=64)
    assert [e.type for e in consumer.feed_bytes(orjson.dumps(START) + b"\n")] == ["RUN_STARTED"]
    finish = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r", "result": "x" * 100}
    with pytest.raises(DecodeError, match="longer than"):
        consumer.feed_bytes(orjson.dumps(finish) + b"\n")


def test_absent_options_take_the_decoder_defaults() -> None:
    """A Consumer given no decoder option frames SSE, as an EventDecoder does by default."""
    consumer = Consumer()
    frame = b"data: " + orjson.dumps(START) + b"\n\n"
    assert [e.type for e in consumer.feed_bytes(frame)] == ["RUN_STARTED"]


def test_a_bad_option_is_refused_as_by_the_decoder() -> None:
    """An invalid transport is the decoder's UsageError."""
    with pytest.raises(UsageError):
        Consumer(transport="xml")  # type: ignore[arg-type]
