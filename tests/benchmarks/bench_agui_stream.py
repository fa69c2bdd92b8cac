"""AG-UI stream figures: SSE decode, delta scaling, whole-run replay.

Registered into :data:`tests.benchmarks.bench.REGISTRY` on import (``bench`` imports
this module at its end).

* ``agui.decode_sse``: SSE bytes → boundary-checked typed events (framing, JSON,
  compatibility boundary, enforcement: :class:`agentproto.agui.EventDecoder`), against
  the peer's ``TypeAdapter(Event).validate_json`` on each event's JSON bytes (the peer
  is handed its JSON already framed, which only favours it);
* ``agui.encode_sse``: typed event → one SSE frame, ``encode_event_sse(ev)`` (bytes)
  against ag-ui-protocol's ``EventEncoder().encode(ev)`` (a ``str``: the encoding to
  bytes a server still needs is left out of the peer's time, which only favours it);
* ``agui.delta_1mb_over_1kb``: one-op ``STATE_DELTA`` applied by the reducer to a
  1 MB state vs a 1 KB state, per delta (ours alone, ratio = 1 MB / 1 KB);
* ``agui.replay_100k``: the whole run, SSE bytes → final state with every stage on
  (:class:`agentproto.agui.Consumer`), in events/s;
* ``agui.replay_100k_over_10k``: per-event cost of that replay over the whole run vs
  over its first tenth (linearity: 1.0 means no slowdown as the conversation grows).
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from typing import Any

import orjson

from agentproto.agui import Consumer, Conversation, EventDecoder, encode_event_sse, schema
from tests.benchmarks.bench import Figure, Workload, benchmark


def _frames(blobs: Sequence[bytes]) -> list[bytes]:
    return [b"data: " + blob + b"\n\n" for blob in blobs]


def _loop_ours_sse(frames: Sequence[bytes]) -> None:
    # the bytes arrive as a network read would hand them over: 64 KiB at a time
    data = b"".join(frames)
    feed = EventDecoder().feed_bytes
    for start in range(0, len(data), 65_536):
        feed(data[start : start + 65_536])


@benchmark("agui.decode_sse")
def bench_agui_decode_sse(w: Workload) -> list[Figure]:
    """SSE bytes → boundary-checked typed events vs the peer's ``validate_json``."""
    selection = w.agui_selection
    blobs = w.blobs_of(selection)
    frames = _frames(blobs)
    w.peer_typed(selection)  # the peer accepts every kept event (checked, not timed)
    decoded = EventDecoder().feed_bytes(b"".join(frames))
    if len(decoded) != len(frames):
        raise RuntimeError(f"decoded {len(decoded)} of {len(frames)} events")
    validate = w.agui_peer.adapter.validate_json

    def loop_peer(items: Sequence[bytes]) -> None:
        for blob in items:
            validate(blob)

    ours, peer = w.time((_loop_ours_sse, frames), (loop_peer, blobs))
    return [Figure.comparison("agui.decode_sse", ours, peer)]


@benchmark("agui.encode_sse")
def bench_agui_encode_sse(w: Workload) -> list[Figure]:
    """Typed event → SSE frame: ``encode_event_sse(ev)`` vs the peer's
    ``EventEncoder().encode(ev)``."""
    selection = w.agui_selection
    ours_events = w.ours_typed(selection)
    peer_models = w.peer_typed(selection)  # raises PeerMissing without ag-ui-protocol
    from ag_ui.encoder import EventEncoder

    peer_encode = EventEncoder().encode
    for ours_event, model in zip(ours_events, peer_models, strict=True):  # checked, not timed
        ours_frame, peer_frame = encode_event_sse(ours_event), peer_encode(model)
        if not (ours_frame.startswith(b"data: ") and ours_frame.endswith(b"\n\n")) or (
            orjson.loads(ours_frame[6:-2]) != orjson.loads(peer_frame[6:-2])
        ):
            raise RuntimeError(f"the two SSE frames differ: {ours_frame!r} vs {peer_frame!r}")

    def loop_ours(events: Sequence[Any]) -> None:
        encode = encode_event_sse
        for event in events:
            encode(event)

    def loop_peer(models: Sequence[Any]) -> None:
        encode = peer_encode
        for model in models:
            encode(model)

    ours, peer = w.time((loop_ours, ours_events), (loop_peer, peer_models))
    return [Figure.comparison("agui.encode_sse", ours, peer)]


@benchmark("agui.decode_floor")
def bench_agui_decode_floor(w: Workload) -> list[Figure]:
    """Our SSE decode against ``orjson.loads`` alone (the floor): ``peer`` is the orjson
    cost, ``ratio`` the share of our decode time that is JSON parsing."""
    selection = w.ours_selection
    blobs = w.blobs_of(selection)
    frames = _frames(blobs)

    def loop_floor(items: Sequence[bytes]) -> None:
        loads = orjson.loads
        for blob in items:
            loads(blob)

    ours, floor = w.time((_loop_ours_sse, frames), (loop_floor, blobs))
    return [Figure.comparison("agui.decode_floor", ours, floor)]


def _state(rows: int) -> dict[str, Any]:
    """An agent state: settings, and a list of task rows of ~130 JSON bytes each."""
    return {
        "settings": {"theme": "dark", "model": "m-1", "limits": {"tokens": 4096}},
        "tasks": [
            {"id": f"t{i}", "title": f"task {i} " + "x" * 60, "done": False, "tags": ["a", "b"]}
            for i in range(rows)
        ],
    }


def _per_delta_us(rows: int, n: int, repeat: int) -> tuple[float, int]:
    state = _state(rows)
    size = len(orjson.dumps(state))
    deltas = [
        schema.StateDeltaEvent(
            delta=[
                schema.ReplaceOperation(path=f"/tasks/{(i * 7919) % rows}/done", value=i % 2 == 0)
            ]
        )
        for i in range(n)
    ]
    best = float("inf")
    for _ in range(max(1, repeat)):
        conversation = Conversation(state=state)
        apply = conversation.apply
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter_ns()
            for delta in deltas:
                apply(delta)
            best = min(best, time.perf_counter_ns() - start)
        finally:
            gc.enable()
    return best / n / 1000.0, size


@benchmark("agui.delta_1mb_over_1kb")
def bench_agui_delta_scaling(w: Workload) -> list[Figure]:
    """One-op STATE_DELTA on a 1 MB state vs a 1 KB state (per-delta time ratio)."""
    n = min(20_000, max(1_000, w.n_events // 5))
    small_us, small_size = _per_delta_us(7, n, w.repeat)
    large_us, large_size = _per_delta_us(8_000, n, w.repeat)
    w.log(f"# delta states: {small_size:,} bytes and {large_size:,} bytes")
    return [Figure.scaling("agui.delta_1mb_over_1kb", small_us, large_us)]


def _replay_ns(chunks: Sequence[bytes], *, finish: bool) -> int:
    """One replay of ``chunks`` by a fresh :class:`Consumer`, in nanoseconds."""
    consumer = Consumer()
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter_ns()
        for chunk in chunks:
            consumer.feed_bytes(chunk)
        elapsed = time.perf_counter_ns() - start
    finally:
        gc.enable()
    if finish:
        consumer.close()  # the whole run must end cleanly (checked, not timed)
    return elapsed


def _replay_pair_us(w: Workload) -> tuple[float, float]:
    """Per-event cost of replaying the run's first tenth and the whole run, each the
    best of ``w.repeat`` rounds. The two are timed in alternation, so that a change in
    the machine's load between them does not pass for a change in linearity. Measured
    once per workload."""
    cached: tuple[float, float] | None = getattr(w, "_replay_pair_us", None)
    if cached is None:
        frames = _frames(w.blobs)
        tenth = max(1, len(frames) // 10)
        runs = []
        for count in (tenth, len(frames)):
            stream = b"".join(frames[:count])
            chunks = [stream[i : i + 65_536] for i in range(0, len(stream), 65_536)]
            runs.append((chunks, count))
        best = [float("inf"), float("inf")]
        for _ in range(max(1, w.repeat)):
            for which, (chunks, count) in enumerate(runs):
                elapsed = _replay_ns(chunks, finish=which == 1)
                best[which] = min(best[which], elapsed / count / 1000.0)
        cached = (best[0], best[1])
        w._replay_pair_us = cached  # type: ignore[attr-defined]
    return cached


@benchmark("agui.replay_100k")
def bench_agui_replay(w: Workload) -> list[Figure]:
    """The whole run, SSE bytes → final state with every stage on, in events/s."""
    return [Figure.throughput("agui.replay_100k", 1e6 / _replay_pair_us(w)[1])]


@benchmark("agui.replay_100k_over_10k")
def bench_agui_replay_linearity(w: Workload) -> list[Figure]:
    """Per-event replay cost over the whole run vs over its first tenth."""
    first_us, whole_us = _replay_pair_us(w)
    return [Figure.scaling("agui.replay_100k_over_10k", first_us, whole_us)]
