"""Paired comparison of the two builds: the compiled build's gain on each hot loop.

Usage: ``python -m tests.benchmarks.paired --compiled-site DIR [--events N] [--rounds R]``
(``nox -s bench`` runs it after the figures).

The side-by-side figures of :mod:`tests.benchmarks.builds` come from two runs taken one
after the other, so on a busy machine their gain moves with the load between them. Here
each build runs in a long-lived worker process (the pure one with the repository's
``sdk`` first on ``PYTHONPATH``, the compiled one with ``DIR``); both prepare the same run,
then the parent asks them in turn, one loop at a time, to time one pass over it. The
order alternates every round, each (build, loop) keeps its best round, and
``gain = best pure / best compiled``. The ``orjson`` loop (``orjson.loads`` of each
event: the same code in both builds) is the control: its gain shows how far the noise
goes.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from tests.benchmarks.builds import ROOT, build_of

__all__ = ["LOOPS", "main", "measure"]

LOOPS = ("decode_sse", "orjson", "decode_json", "encode_json", "acp_parse_apply")
"""The loops timed: ``agui.decode_sse``'s, the JSON parsing alone (the control),
``agui.decode_json``'s, ``agui.encode_json``'s and ``acp.parse_apply_100k``'s."""


def _cases(events: int) -> dict[str, tuple[Callable[[Any], object], Any]]:
    from tests.benchmarks import bench, bench_acp, bench_agui_stream

    w = bench.Workload(events)
    w.log = lambda _text: None
    selection = w.ours_selection
    blobs = w.blobs_of(selection)

    def loads(items: Sequence[bytes]) -> None:
        parse = orjson.loads
        for blob in items:
            parse(blob)

    return {
        "decode_sse": (bench_agui_stream._loop_ours_sse, bench_agui_stream._frames(blobs)),
        "orjson": (loads, blobs),
        "decode_json": (bench._loop_ours_decode, blobs),
        "encode_json": (bench._loop_ours_encode, w.ours_typed(selection)),
        "acp_parse_apply": (bench_acp._loop_ours, bench_acp.streams(events)[0]),
    }


def _serve(events: int) -> None:
    """Worker: say which build this is, then time one pass per loop name read on stdin."""
    cases = _cases(events)
    for loop, items in cases.values():
        loop(items)  # warm-up
    print(build_of(), flush=True)
    for line in sys.stdin:
        loop, items = cases[line.strip()]
        gc.collect()
        gc.disable()
        start = time.perf_counter_ns()
        loop(items)
        elapsed = time.perf_counter_ns() - start
        gc.enable()
        print(elapsed, flush=True)


class _Worker:
    def __init__(self, site: Path, events: int) -> None:
        path = [str(site), str(ROOT), os.environ.get("PYTHONPATH", "")]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p)}
        cmd = [sys.executable, "-m", "tests.benchmarks.paired", "--worker", "--events", str(events)]
        self.process = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
        )
        self.build = self._read()

    def _read(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line:
            raise RuntimeError(f"a benchmark worker stopped (exit {self.process.wait()})")
        return line

    def time(self, loop: str) -> int:
        assert self.process.stdin is not None
        self.process.stdin.write(loop + "\n")
        self.process.stdin.flush()
        return int(self._read())

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait()


def measure(
    site: Path, events: int, rounds: int, *, require_compiled: bool = True
) -> dict[str, tuple[float, float]]:
    """Best µs per event of each loop, ``(pure, compiled)``, timed in alternation.

    Raises:
        RuntimeError: the worker given ``site`` does not import the compiled build (with
            ``require_compiled``), or the other one does not import the pure build.
    """
    pure, compiled = _Worker(ROOT / "sdk", events), _Worker(site, events)
    try:
        if pure.build != "pure" or (require_compiled and compiled.build != "compiled"):
            raise RuntimeError(f"workers import the {pure.build} and the {compiled.build} build")
        best = {loop: [float("inf"), float("inf")] for loop in LOOPS}
        for round_ in range(max(1, rounds)):
            order = [(0, pure), (1, compiled)][:: 1 if round_ % 2 == 0 else -1]
            for loop in LOOPS:
                for k, worker in order:
                    best[loop][k] = min(best[loop][k], worker.time(loop))
    finally:
        pure.close()
        compiled.close()
    return {loop: (p / events / 1000.0, c / events / 1000.0) for loop, (p, c) in best.items()}


def table(results: dict[str, tuple[float, float]]) -> str:
    """One line per loop: µs per event in each build and the compiled build's gain."""
    head = f"{'loop':<16} {'pure':>9} {'compiled':>9} {'gain':>7}"
    lines = [head, "-" * len(head)]
    for loop, (pure, compiled) in results.items():
        lines.append(f"{loop:<16} {pure:>9.3f} {compiled:>9.3f} {pure / compiled:>6.2f}x")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.benchmarks.paired", description=__doc__)
    p.add_argument("--compiled-site", type=Path, metavar="DIR")
    p.add_argument("--events", type=int, default=5_000, help="events per loop (default 5000)")
    p.add_argument("--rounds", type=int, default=30, help="alternating rounds (default 30)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        _serve(args.events)
        return 0
    if args.compiled_site is None:
        p.error("--compiled-site DIR is required")
    results = measure(args.compiled_site, args.events, args.rounds)
    print(f"# paired builds: {args.events} events per loop, best of {args.rounds} rounds")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
