"""Benchmarks of agentproto side by side with the peer SDKs.

Usage: ``python -m tests.benchmarks.bench [--events N] [--repeat R] [--seed S]
[--only PATTERN ...] [--json PATH] [--list]`` (``nox -s bench -- …`` installs the peers).

Theory of operation. One deterministic AG-UI run (:mod:`tests.benchmarks.run_generator`)
is the workload of every figure. A *benchmark* is a function registered under the name of
the figure it produces; it takes the shared :class:`Workload` and returns
:class:`Figure` objects. The workload prepares lazily, once, what several benchmarks
share: the JSON bytes of each event, the typed events, the peer SDK and the subset of
events both sides represent.

Fairness rules:

* Both sides of a comparison run on exactly the same events. Each distinct event
  *shape* (its type and key structure) is tried once on both sides first: a shape is
  kept only when our parser and the peer both accept it, neither keeps a field as an
  untyped extra, and both dump it back to the same JSON. Excluded events are counted
  and printed with the reason. Every kept event is then parsed on both sides once more
  outside the timed loops, and a failure there aborts the run: a failed parse is never
  timed as if it were work done.
* Timed loops are plain ``for`` loops calling each side's API directly (no wrapper
  function on one side only), after a warm-up, with the garbage collector disabled.
  The sides of a figure are timed in alternation, chunk by chunk, and each chunk keeps
  its best of ``--repeat`` rounds (:func:`best_us_per_item`); figures are microseconds
  per event.
* The peer is called the way its own code calls itself: ag-ui-protocol's
  ``EventEncoder`` serialises an event with ``event.model_dump_json(by_alias=True)``,
  so that is the peer's encode.

Adding a figure: write ``def bench_x(w: Workload) -> list[Figure]`` decorated with
``@benchmark("area.figure_name")``, build its figure with :meth:`Figure.comparison`,
:meth:`Figure.scaling` or :meth:`Figure.throughput`, and raise :class:`PeerMissing`
(via a ``Workload`` property) when the peer cannot be imported.
"""

from __future__ import annotations

import argparse
import fnmatch
import gc
import importlib.metadata
import math
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import orjson

from agentproto import AgentProtoError
from agentproto.agui import dump_event, parse_event
from tests.benchmarks import builds
from tests.benchmarks.run_generator import generate_run

__all__ = [
    "REGISTRY",
    "BenchError",
    "Figure",
    "PeerMissing",
    "Workload",
    "benchmark",
    "best_us_per_item",
    "main",
    "run",
]

WARMUP_ITEMS = 2_000
"""Items each loop runs once, untimed, before its timed passes."""

CHUNK_ITEMS = 5_000
"""Items per timed chunk (see :func:`best_us_per_item`)."""


class BenchError(RuntimeError):
    """The benchmark cannot give an honest figure (e.g. a kept event failed to parse)."""


class PeerMissing(RuntimeError):
    """The peer SDK a comparison needs cannot be imported."""


# -- figures -----------------------------------------------------------------


def _sig(x: float, digits: int) -> float:
    """``x`` rounded to ``digits`` significant digits."""
    return float(f"{x:.{digits}g}")


@dataclass(frozen=True)
class Figure:
    """One measured figure, as written to the ``--json`` file.

    * comparison: ``ours`` and ``peer`` are costs in ``us/event``, ``ratio = peer / ours``,
      ``better == "higher"`` (a ratio above 1 means we are faster);
    * scaling (ours alone): ``ours`` is the cost at the large size, ``peer`` is ``None``,
      ``ratio = cost large / cost small``, ``better == "lower"``;
    * throughput: ``unit == "events/s"``, ``ours`` is events per second, ``peer`` and
      ``ratio`` are ``None``, ``better == "higher"``;
    * import time: ``unit == "ms"``, ``ours`` and ``peer`` in milliseconds,
      ``ratio = peer / ours``, ``better == "higher"``;
    * measurement (ours alone): ``unit`` ``"ms"`` or ``"KiB"``, ``peer`` and ``ratio``
      are ``None``, ``better == "lower"``.

    ``build`` is the build of agentproto measured: ``"pure"`` or ``"compiled"``.
    """

    name: str
    unit: str
    ours: float
    peer: float | None
    ratio: float | None
    better: Literal["higher", "lower"]
    build: str = "pure"

    @classmethod
    def comparison(
        cls, name: str, ours_us: float, peer_us: float, unit: str = "us/event"
    ) -> Figure:
        """Ours against the peer, both in µs per event or both in ``unit`` (lower is better)."""
        ours, peer = _sig(ours_us, 6), _sig(peer_us, 6)
        return cls(name, unit, ours, peer, _sig(peer / ours, 6), "higher")

    @classmethod
    def scaling(cls, name: str, small_us: float, large_us: float) -> Figure:
        """How our per-event cost grows from a small to a large input."""
        small, large = _sig(small_us, 6), _sig(large_us, 6)
        return cls(name, "us/event", large, None, _sig(large / small, 6), "lower")

    @classmethod
    def throughput(cls, name: str, events_per_s: float) -> Figure:
        """Our throughput in events per second."""
        return cls(name, "events/s", _sig(events_per_s, 6), None, None, "higher")

    @classmethod
    def measure(cls, name: str, unit: str, value: float) -> Figure:
        """A measurement of ours alone in ``unit`` (``ms``, ``KiB``), lower being better."""
        return cls(name, unit, _sig(value, 6), None, None, "lower")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "unit": self.unit,
            "ours": self.ours,
            "peer": self.peer,
            "ratio": self.ratio,
            "better": self.better,
            "build": self.build,
        }


# -- timing ------------------------------------------------------------------


Loop = Callable[[Sequence[Any]], object]


def best_us_per_item(
    cases: Sequence[tuple[Loop, Sequence[Any]]], repeat: int, chunk: int = CHUNK_ITEMS
) -> list[float]:
    """µs per item of each ``loop(items)`` case, timed side by side.

    Each case first runs once over its first items, untimed (warm-up). Then, ``repeat``
    times, with the garbage collector collected and disabled, every chunk of the items is
    timed on every case in turn (the order alternates between rounds), and each (case,
    chunk) keeps its best time. A case's figure is the sum of its chunks' bests over its
    item count: every item counted once, a burst of noise on a shared machine spoiling
    one chunk of one round rather than a whole pass, and both sides of a comparison
    exposed to the same moments.
    """
    sizes = {len(items) for _, items in cases}
    if len(sizes) != 1 or 0 in sizes:
        raise BenchError(f"cases timed side by side need the same non-zero length: {sizes}")
    (size,) = sizes
    parts = [
        [items[start : start + chunk] for start in range(0, size, chunk)] for _, items in cases
    ]
    for loop, items in cases:
        loop(items[:WARMUP_ITEMS])
    best = [[math.inf] * len(p) for p in parts]
    order = list(range(len(cases)))
    for _ in range(max(1, repeat)):
        gc.collect()
        gc.disable()
        try:
            for c in range(len(parts[0])):
                for k in order:
                    loop, part = cases[k][0], parts[k][c]
                    start = time.perf_counter_ns()
                    loop(part)
                    elapsed = time.perf_counter_ns() - start
                    best[k][c] = min(best[k][c], elapsed)
        finally:
            gc.enable()
        order.reverse()
    return [sum(b) / size / 1000.0 for b in best]


# -- the AG-UI peer ----------------------------------------------------------


@dataclass
class AguiPeer:
    """ag-ui-protocol, imported: its ``Event`` union adapter and version."""

    adapter: Any  # pydantic.TypeAdapter(ag_ui.core.Event)
    version: str
    base_model: type


def load_agui_peer() -> AguiPeer:
    """Import ag-ui-protocol, or raise :class:`PeerMissing` saying how to get it."""
    try:
        import pydantic
        from ag_ui.core import Event
    except ImportError as exc:
        raise PeerMissing(
            f"peer ag-ui-protocol is missing ({exc}); run `nox -s bench` or install "
            "ag-ui-protocol==1.0.0"
        ) from exc
    return AguiPeer(
        adapter=pydantic.TypeAdapter(Event),
        version=importlib.metadata.version("ag-ui-protocol"),
        base_model=pydantic.BaseModel,
    )


def _shape(value: Any, depth: int = 0) -> Any:
    """The structure of a JSON value (keys and value types, four levels deep)."""
    if isinstance(value, dict):
        if depth >= 4:
            return "object"
        return ("object", tuple(sorted((k, _shape(v, depth + 1)) for k, v in value.items())))
    if isinstance(value, list):
        if depth >= 4:
            return "array"
        return ("array", tuple(sorted({_shape(v, depth + 1) for v in value}, key=repr)))
    return type(value).__name__


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:160]


def _peer_extras(model: Any, base: Any, path: str = "") -> Iterator[str]:
    """Paths (attribute names, then the extra's key) of fields a pydantic model kept as extras."""
    if isinstance(model, base):
        for key in model.model_extra or {}:
            yield f"{path}/{key}"
        for name, value in model.__dict__.items():
            yield from _peer_extras(value, base, f"{path}/{name}")
    elif isinstance(model, list):
        for i, item in enumerate(model):
            yield from _peer_extras(item, base, f"{path}/{i}")


@dataclass
class Selection:
    """Which events a comparison runs on, and why the others were left out."""

    indices: list[int]
    shapes: int
    excluded: Counter[tuple[str, str]] = field(default_factory=Counter)

    def report(self, label: str, total: int) -> str:
        lines = [
            f"# {label}: {len(self.indices)}/{total} events kept "
            f"({self.shapes} distinct event shapes tried)"
        ]
        for (event_type, why), count in sorted(self.excluded.items()):
            lines.append(f"#   excluded {count:>7} x {event_type}: {why}")
        return "\n".join(lines)


# -- the workload ------------------------------------------------------------


class Workload:
    """The run every figure measures, and what benchmarks share, built on first use."""

    def __init__(self, n_events: int, seed: int = 0, repeat: int = 3) -> None:
        self.n_events = n_events
        self.seed = seed
        self.repeat = repeat
        self.events = generate_run(n_events, seed)
        self.blobs = [orjson.dumps(e) for e in self.events]
        self.log: Callable[[str], None] = print
        self._typed: dict[tuple[str, int], list[Any]] = {}

    def time(self, *cases: tuple[Loop, Sequence[Any]]) -> list[float]:
        """µs per item of each ``(loop, items)`` case, timed side by side (best of
        ``self.repeat``; see :func:`best_us_per_item`)."""
        return best_us_per_item(cases, self.repeat)

    @cached_property
    def agui_peer(self) -> AguiPeer:
        """ag-ui-protocol (raises :class:`PeerMissing` when it cannot be imported)."""
        return load_agui_peer()

    @cached_property
    def ours_selection(self) -> Selection:
        """The events our parser accepts and dumps back unchanged (all, unless a bug)."""
        return self._select(peer=None)

    @cached_property
    def agui_selection(self) -> Selection:
        """The events both we and ag-ui-protocol represent exactly."""
        return self._select(peer=self.agui_peer)

    def _select(self, peer: AguiPeer | None) -> Selection:
        verdicts: dict[Any, str | None] = {}
        kept: list[int] = []
        excluded: Counter[tuple[str, str]] = Counter()
        for i, event in enumerate(self.events):
            key = _shape(event)
            if key not in verdicts:
                verdicts[key] = self._try_shape(event, self.blobs[i], peer)
            why = verdicts[key]
            if why is None:
                kept.append(i)
            else:
                excluded[(str(event.get("type")), why)] += 1
        selection = Selection(kept, len(verdicts), excluded)
        label = "agui vs ag-ui-protocol" if peer else "agui (ours alone)"
        self.log(selection.report(label, len(self.events)))
        if not kept:
            raise BenchError(f"{label}: no event is representable on both sides")
        return selection

    @staticmethod
    def _try_shape(event: dict[str, Any], blob: bytes, peer: AguiPeer | None) -> str | None:
        """None when both sides represent the event exactly, else why not."""
        try:
            ours = parse_event(orjson.loads(blob))
        except AgentProtoError as exc:
            return f"ours rejects it ({_first_line(exc)})"
        if dump_event(ours) != event:
            return "ours does not dump it back unchanged"
        if peer is None:
            return None
        try:
            model = peer.adapter.validate_json(blob)
        except Exception as exc:  # pydantic.ValidationError and anything else it raises
            return f"peer rejects it ({_first_line(exc)})"
        extras = sorted(_peer_extras(model, peer.base_model))
        if extras:
            return f"peer keeps {', '.join(extras)} as untyped extras"
        if orjson.loads(model.model_dump_json(by_alias=True)) != event:
            return "peer does not dump it back unchanged"
        return None

    def blobs_of(self, selection: Selection) -> list[bytes]:
        return [self.blobs[i] for i in selection.indices]

    def ours_typed(self, selection: Selection) -> list[Any]:
        """Our typed events for a selection; any failure aborts (never timed as work)."""
        key = ("ours", id(selection))
        if key in self._typed:
            return self._typed[key]
        out = self._typed[key] = []
        for i in selection.indices:
            try:
                out.append(parse_event(orjson.loads(self.blobs[i])))
            except AgentProtoError as exc:
                raise BenchError(
                    f"event #{i} passed the shape trial but ours failed: {exc}"
                ) from exc
        return out

    def peer_typed(self, selection: Selection) -> list[Any]:
        """ag-ui-protocol models for a selection; any failure aborts."""
        key = ("agui_peer", id(selection))
        if key in self._typed:
            return self._typed[key]
        validate = self.agui_peer.adapter.validate_json
        out = self._typed[key] = []
        for i in selection.indices:
            try:
                out.append(validate(self.blobs[i]))
            except Exception as exc:
                raise BenchError(
                    f"event #{i} passed the shape trial but the peer failed: {exc}"
                ) from exc
        return out


# -- the registry ------------------------------------------------------------

Benchmark = Callable[[Workload], list[Figure]]
REGISTRY: dict[str, Benchmark] = {}


def benchmark(name: str) -> Callable[[Benchmark], Benchmark]:
    """Register a benchmark under the name of the figure it produces."""

    def register(fn: Benchmark) -> Benchmark:
        if name in REGISTRY:
            raise ValueError(f"benchmark {name!r} registered twice")
        REGISTRY[name] = fn
        return fn

    return register


# -- AG-UI figures -----------------------------------------------------------


def _loop_ours_decode(blobs: Sequence[bytes]) -> None:
    loads, parse = orjson.loads, parse_event
    for b in blobs:
        parse(loads(b))


def _loop_ours_encode(events: Sequence[Any]) -> None:
    dumps, dump = orjson.dumps, dump_event
    for ev in events:
        dumps(dump(ev))


def _loop_peer_encode(models: Sequence[Any]) -> None:
    for m in models:
        m.model_dump_json(by_alias=True)  # exactly ag_ui.encoder.EventEncoder's call


@benchmark("agui.decode_json")
def bench_agui_decode_json(w: Workload) -> list[Figure]:
    """JSON bytes of one event → typed event: ``parse_event(orjson.loads(b))`` vs the
    peer's ``TypeAdapter(Event).validate_json(b)``."""
    selection = w.agui_selection
    blobs = w.blobs_of(selection)
    w.ours_typed(selection)
    w.peer_typed(selection)  # both verified (and warm) before anything is timed
    validate = w.agui_peer.adapter.validate_json

    def loop_peer(items: Sequence[bytes]) -> None:
        for b in items:
            validate(b)

    ours, peer = w.time((_loop_ours_decode, blobs), (loop_peer, blobs))
    return [Figure.comparison("agui.decode_json", ours, peer)]


@benchmark("agui.encode_json")
def bench_agui_encode_json(w: Workload) -> list[Figure]:
    """Typed event → JSON bytes: ``orjson.dumps(dump_event(ev))`` vs the peer's
    ``ev.model_dump_json(by_alias=True)``."""
    selection = w.agui_selection
    ours_events = w.ours_typed(selection)
    peer_models = w.peer_typed(selection)
    ours, peer = w.time((_loop_ours_encode, ours_events), (_loop_peer_encode, peer_models))
    return [Figure.comparison("agui.encode_json", ours, peer)]


# -- running -----------------------------------------------------------------


@dataclass
class Outcome:
    """What a run produced, per benchmark in run order: its figures, or why it was skipped."""

    results: dict[str, list[Figure] | str]

    @property
    def figures(self) -> list[Figure]:
        return [f for r in self.results.values() if not isinstance(r, str) for f in r]

    @property
    def missing(self) -> dict[str, str]:
        return {name: r for name, r in self.results.items() if isinstance(r, str)}


def select(patterns: Sequence[str] | None) -> list[str]:
    """Registered names matching any of the patterns (fnmatch), in registry order."""
    if not patterns:
        return list(REGISTRY)
    chosen = [n for n in REGISTRY if any(fnmatch.fnmatchcase(n, p) for p in patterns)]
    if not chosen:
        raise SystemExit(f"--only {' '.join(patterns)} matches none of: {', '.join(REGISTRY)}")
    return chosen


def run(workload: Workload, names: Sequence[str]) -> Outcome:
    """Run the named benchmarks; a missing peer skips its benchmark and is recorded."""
    results: dict[str, list[Figure] | str] = {}
    for name in names:
        try:
            results[name] = REGISTRY[name](workload)
        except PeerMissing as exc:
            results[name] = str(exc)
            print(f"SKIPPED {name}: {exc}", file=sys.stderr)
    return Outcome(results)


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if unit == "events/s" else f"{x:.3f}"


def table(outcome: Outcome) -> str:
    """The figures side by side (a skipped comparison shows its peer as missing)."""
    head = f"{'figure':<22} {'unit':<9} {'ours':>10} {'peer':>10} {'ratio':>8}  better"
    lines = [head, "-" * len(head)]
    for name, result in outcome.results.items():
        if isinstance(result, str):
            lines.append(f"{name:<22} {'':<9} {'':>10} {'MISSING':>10} {'':>8}  (peer missing)")
            continue
        for f in result:
            ratio = "—" if f.ratio is None else f"{f.ratio:.2f}x"
            lines.append(
                f"{f.name:<22} {f.unit:<9} {_fmt(f.ours, f.unit):>10} "
                f"{_fmt(f.peer, f.unit):>10} {ratio:>8}  {f.better}"
            )
    return "\n".join(lines)


def _versions() -> str:
    parts = [f"python {platform.python_version()}", f"{platform.machine()}"]
    for dist in ("agentproto", "orjson", "cattrs", "ag-ui-protocol", "pydantic"):
        try:
            parts.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist} (not installed)")
    return ", ".join(parts)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tests.benchmarks.bench", description=__doc__.split("\n")[0]
    )
    p.add_argument("--events", type=int, default=100_000, help="events in the run (default 100000)")
    p.add_argument("--repeat", type=int, default=3, help="timed passes, best kept (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated run (default 0)")
    p.add_argument(
        "--only", action="append", metavar="NAME", help="figure name or glob; repeatable"
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="write the figures as a JSON list")
    p.add_argument("--list", action="store_true", help="list the figure names and exit")
    p.add_argument(
        "--compiled-site",
        type=Path,
        metavar="DIR",
        help="also run on the compiled build installed in DIR (nox -s bench does)",
    )
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; 0 when every selected figure was produced, 1 when a peer was missing."""
    args = _parser().parse_args(argv)
    if args.list:
        for name, fn in REGISTRY.items():
            print(f"{name:<22} {(fn.__doc__ or '').split(chr(10))[0]}")
        return 0
    names = select(args.only)
    started = time.perf_counter()
    workload = Workload(args.events, seed=args.seed, repeat=args.repeat)
    size = sum(map(len, workload.blobs)) / len(workload.blobs)
    print(f"# {_versions()}")
    print(
        f"# run: {args.events} events (seed {args.seed}, {size:.0f} JSON bytes/event), "
        f"best of {args.repeat}"
    )
    build = builds.build_of()
    print(f"# build: {build}")
    outcome = run(workload, names)
    print(table(outcome))
    payload = [replace(f, build=build).to_json() for f in outcome.figures]
    status = 0
    if args.compiled_site is not None:
        compiled, status = builds.run_compiled(
            args.compiled_site, builds.child_argv(sys.argv[1:] if argv is None else argv)
        )
        print("# both builds (ratio c.: the compiled build's ratio; gain: c. over pure)")
        print(builds.side_by_side(payload, compiled))
        payload += compiled
    print(f"# {time.perf_counter() - started:.1f}s")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2) + b"\n")
    if outcome.missing:
        print(
            f"peer missing: {len(outcome.missing)} figure(s) not measured "
            f"({', '.join(outcome.missing)}); see the SKIPPED lines above",
            file=sys.stderr,
        )
        return 1
    return status


# figures defined in other modules register themselves on import
from tests.benchmarks import (  # noqa: E402, F401
    bench_acp,
    bench_acp_remote,
    bench_agui_stream,
    bench_imports,
    bench_streams,
)

benchmark(bench_acp.FIGURE)(bench_acp.bench_acp_parse_apply)

if __name__ == "__main__":
    # run the registry of the importable module (the one figure modules register into),
    # not a second copy of it under the name __main__
    from tests.benchmarks import bench as _bench

    sys.exit(_bench.main())
