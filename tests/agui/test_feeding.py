"""Every corpus stream gives the same verdict however its bytes are split (h11-style)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from agentproto import AgentProtoError
from agentproto.agui import Consumer, dump_event
from tests.conformance.agui_runner import (
    CORPUS_FOLDERS,
    StreamCase,
    completed_input,
    default_corpora,
    encode_frames,
    load_streams,
    peer_version,
)
from tests.needs import spec_params


def _cases(root: Path) -> list[Any]:
    cases = []
    for corpus in default_corpora(root):
        streams, _ = load_streams(corpus)
        cases += [
            pytest.param(corpus.protocol_version, case, id=f"{corpus.label}/{case.name}")
            for case in streams
        ]
    return cases


def _run(case: StreamCase, version: str, pieces: list[bytes]) -> tuple[Any, ...]:
    consumer = Consumer(
        run_input=completed_input(case), protocol_version=version, peer_version=peer_version(case)
    )
    delivered: list[Any] = []
    error = None
    try:
        for piece in pieces:
            delivered += consumer.feed_bytes(piece)
        delivered += consumer.close()
    except AgentProtoError as exc:
        error = (type(exc).__name__, str(exc))
    return (
        [dump_event(e) for e in delivered],
        error,
        [(d.code, d.path, d.index) for d in consumer.diagnostics],
        consumer.conversation.to_json(),
    )


@pytest.mark.parametrize(("version", "case"), spec_params(_cases, *CORPUS_FOLDERS, width=2))
def test_whole_bytewise_and_random_chunks_agree(version: str, case: StreamCase) -> None:
    """Fed whole, one byte at a time and in random chunks, a stream delivers the same."""
    data = b"".join(encode_frames(case.data["stream"]))
    whole = _run(case, version, [data])
    bytewise = _run(case, version, [data[i : i + 1] for i in range(len(data))])
    rng = random.Random(case.name)
    cuts = sorted(rng.sample(range(1, max(2, len(data))), k=min(12, max(0, len(data) - 2))))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    assert bytewise[1:] == whole[1:] and chunks_match(_run(case, version, chunks), whole)
    # delivered events agree when nothing failed (a failure may cut a chunk's events)
    if whole[1] is None:
        assert bytewise[0] == whole[0]


def chunks_match(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Same error, diagnostics and final conversation (and events when nothing failed)."""
    return a[1:] == b[1:] and (a[0] == b[0] or a[1] is not None)
