"""The fuzz loop: generate, run under a budget, check, deduplicate, write reproducers.

Example ``i`` of a run goes to target ``i mod T`` (round robin over the selected
targets, so a time limit still covers each one) and is built from
``random.Random(f"{seed}:{target}:{n}")``, ``n`` being the target's own example
number: ``(seed, target, n)`` rebuilds the input exactly. Failures are grouped into
families by (target, property, exception type, innermost frame); the first example
of each family is shrunk (greedily dropping events, frames or lines while the same
family still fails, within a few seconds) and written to the failure folder as a
JSON reproducer that ``python -m tests.fuzz --reproduce FILE`` replays.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from agentproto import AgentProtoError
from tests.fuzz import mutate as m
from tests.fuzz import properties
from tests.fuzz.properties import (
    MEMORY_CONSTANT,
    MEMORY_FACTOR,
    Failure,
    FuzzTimeout,
    MemoryMeter,
    PropertyFailure,
    failure_from,
    memory_bound,
    time_budget,
)
from tests.fuzz.targets import TARGETS, Target, input_size

DEFAULT_FAILURE_DIR = Path(".fuzz-failures")
TRACED_SLOWDOWN = 4.0


@dataclass
class TargetStats:
    """Per-target counters."""

    examples: int = 0
    seconds: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    peak_ratio: float = 0.0  # the largest peak / bound seen


@dataclass
class Family:
    """Failures that share (target, property, exception type, innermost frame)."""

    first: Failure
    count: int = 0
    reproducer: str | None = None
    shrunk: str = "no"


@dataclass
class Report:
    """What a fuzz run found."""

    seed: str
    stats: dict[str, TargetStats]
    families: dict[tuple[str, str, str, str], Family]
    stopped_early: bool = False

    @property
    def failed(self) -> bool:
        """Whether any property failed."""
        return bool(self.families)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "seed": self.seed,
            "memoryBound": {"factor": MEMORY_FACTOR, "constantBytes": MEMORY_CONSTANT},
            "timeBudgetSeconds": properties.TIME_BUDGET,
            "stoppedEarly": self.stopped_early,
            "targets": {
                name: {
                    "examples": s.examples,
                    "seconds": round(s.seconds, 2),
                    "failures": dict(s.failures),
                    "peakOverBound": round(s.peak_ratio, 3),
                }
                for name, s in self.stats.items()
            },
            "families": [
                {
                    "target": f.first.target,
                    "property": f.first.prop,
                    "exception": f.first.exc_type,
                    "where": f.first.where,
                    "sdkWhere": f.first.sdk_where,
                    "message": f.first.message,
                    "count": f.count,
                    "index": f.first.index,
                    "reproducer": f.reproducer,
                    "shrunk": f.shrunk,
                }
                for f in self.families.values()
            ],
        }


# ---- one example ------------------------------------------------------------------------------


def generate(target: Target, seed: str, index: int, seeds: m.Seeds) -> dict[str, Any]:
    """The input of example ``index`` of ``target`` for ``seed`` (deterministic)."""
    return target.generate(random.Random(f"{seed}:{target.name}:{index}"), seeds)


def run_one(
    target: Target,
    example: dict[str, Any],
    index: int,
    meter: MemoryMeter,
    budget: float | None = None,
) -> tuple[list[Failure], float]:
    """Run one example; its failures and its peak memory over the bound (a ratio).

    ``budget`` defaults to :data:`tests.fuzz.properties.TIME_BUDGET` (``--budget``).
    """
    if budget is None:
        budget = properties.TIME_BUDGET
    problems: list[PropertyFailure] = []
    failures: list[Failure] = []
    peak = 0

    def call() -> None:
        target.run(example, problems)

    if meter.enabled:
        budget *= TRACED_SLOWDOWN  # tracemalloc slows allocation-heavy code about this much
    try:
        with time_budget(budget):
            peak = meter.measure(call)
    except FuzzTimeout as exc:
        failures.append(failure_from(target.name, "hang", exc, index))
    except AgentProtoError:
        pass  # the SDK's own errors are the allowed way to refuse input
    except Exception as exc:
        failures.append(failure_from(target.name, "escape", exc, index))
    if meter.enabled:
        peak = max(peak, meter.last_peak)
    for problem in problems:
        failures.append(failure_from(target.name, problem.prop, problem, index))
    bound = memory_bound(example["size"])
    if meter.enabled and peak > bound:
        message = (
            f"peak {peak / 2**20:.1f} MiB > bound {bound / 2**20:.1f} MiB "
            f"for {example['size']} input bytes"
        )
        failures.append(
            failure_from(
                target.name, "memory", PropertyFailure("memory", message, "peak over bound"), index
            )
        )
    return failures, peak / bound


# ---- shrinking ----------------------------------------------------------------------------------


def _units(example: dict[str, Any]) -> tuple[str, list[Any]] | None:
    if isinstance(example.get("data"), bytes):
        sep = (
            b"\n\n"
            if example.get("transport") == "sse" or example.get("format") == "sse"
            else b"\n"
        )
        data: bytes = example["data"]
        pieces = data.split(sep)
        units = [p + sep for p in pieces[:-1]] + ([pieces[-1]] if pieces[-1] else [])
        return "data", units
    for key in ("events", "updates"):
        if isinstance(example.get(key), list):
            return key, list(example[key])
    return None


def select(example: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
    """The example reduced to the units (events, frames or lines) numbered in ``keep``."""
    found = _units(example)
    if found is None:
        return example
    key, units = found
    kept = [units[i] for i in keep if i < len(units)]
    out = dict(example)
    if key == "data":
        data = b"".join(kept)
        out["data"] = data
        out["points"] = [p for p in example.get("points", []) if p < len(data)]
        out["size"] = len(data) + input_size(example.get("input"))
        if "updates" in out:
            out.pop("updates")
    else:
        out[key] = kept
        out["size"] = len(m.dumps(kept)) + input_size(example.get("input"))
    return out


def shrink(
    target: Target, example: dict[str, Any], failure: Failure, seconds: float = 8.0
) -> list[int] | None:
    """Indexes of the units still needed to hit ``failure``'s family (None: not shrinkable)."""
    found = _units(example)
    if found is None:
        return None
    keep = list(range(len(found[1])))
    deadline = time.monotonic() + seconds
    quiet = MemoryMeter(False)
    position = len(keep) - 1
    while position >= 0 and time.monotonic() < deadline:
        trial = keep[:position] + keep[position + 1 :]
        if trial:
            failures, _ = run_one(target, select(example, trial), failure.index, quiet, 2.0)
            if any(f.key == failure.key for f in failures):
                keep = trial
        position -= 1
    return keep


# ---- reproducers -------------------------------------------------------------------------------


_RUN = re.compile(r"(.)\1{15,}", re.DOTALL)


def _squeeze(text: str, limit: int = 3000) -> str:
    """Runs of one character shown as ``<c x N>``, then cut to ``limit``."""
    text = _RUN.sub(lambda run: f"<{run.group(1)!r} x {len(run.group(0))}>", text)
    return text if len(text) <= limit else text[:limit] + f"…({len(text)} chars)"


def _preview(example: dict[str, Any]) -> str:
    if example.get("input") is not None:  # the run input the consumer was built with
        shown = _squeeze(m.dumps(example["input"])[:200_000], 1000)
        return f"run input: {shown}\ninput: {_preview({**example, 'input': None})}"
    for key in ("data", "body"):
        if isinstance(example.get(key), bytes):
            return _squeeze(repr(example[key][:200_000]))
    for key in ("events", "updates"):
        if key in example:
            return _squeeze(m.dumps(example[key])[:200_000])
    return ""


def write_reproducer(
    folder: Path, seed: str, family: Family, example: dict[str, Any], keep: list[int] | None
) -> str:
    """Write one family's reproducer; returns its path."""
    f = family.first
    digest = hashlib.sha1(repr(f.key).encode()).hexdigest()[:10]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{f.target}-{f.prop}-{digest}.json"
    shown = select(example, keep) if keep is not None else example
    document = {
        "target": f.target,
        "seed": seed,
        "index": f.index,
        "keep": keep,
        "property": f.prop,
        "exception": f.exc_type,
        "where": f.where,
        "sdkWhere": f.sdk_where,
        "message": f.message,
        "traceback": f.traceback_tail,
        "inputPreview": _preview(shown),
        "inputBase64": base64.b64encode(shown["data"]).decode()
        if isinstance(shown.get("data"), bytes) and len(shown["data"]) < 20_000
        else None,
        "replay": f"python -m tests.fuzz --reproduce {path}",
    }
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return str(path)


def reproduce(path: Path, seeds: m.Seeds, out: TextIO = sys.stdout) -> int:
    """Replay a reproducer; 1 when its family still fails, else 0."""
    document = json.loads(path.read_text(encoding="utf-8"))
    target = TARGETS[document["target"]]
    example = generate(target, document["seed"], document["index"], seeds)
    if document.get("keep") is not None:
        example = select(example, document["keep"])
    failures, _ = run_one(target, example, document["index"], MemoryMeter(True))
    for failure in failures:
        print(
            f"[{failure.prop}] {failure.exc_type} at {failure.where}: {failure.message}", file=out
        )
        print(failure.traceback_tail, file=out)
    if not failures:
        print("no failure: the family no longer reproduces", file=out)
    return 1 if failures else 0


# ---- the run ------------------------------------------------------------------------------------


def fuzz(
    *,
    examples: int,
    seed: str,
    targets: Sequence[str],
    seeds: m.Seeds,
    memory: bool = True,
    memory_every: int = 4,
    failure_dir: Path | None = DEFAULT_FAILURE_DIR,
    time_limit: float | None = None,
    do_shrink: bool = True,
    shrink_seconds: float = 90.0,
    progress: TextIO | None = None,
) -> Report:
    """Run ``examples`` examples round robin over ``targets``.

    Memory is traced (tracemalloc, which slows a run about threefold) on every
    ``memory_every``-th example of each target. Shrinking gets at most 8 s per family
    and ``shrink_seconds`` in all; it does not count against ``time_limit``.
    """
    chosen = [TARGETS[name] for name in targets]
    report = Report(seed, {t.name: TargetStats() for t in chosen}, {})
    meter = MemoryMeter(memory)
    untraced = MemoryMeter(False)
    # warm-up: lazily built loaders and caches are not the examples' memory
    warm = MemoryMeter(False)
    for target in chosen:
        for n in range(10):
            run_one(target, generate(target, "warm-up", n, seeds), n, warm)
    started = time.monotonic()
    shrink_left = shrink_seconds
    try:
        for i in range(examples):
            if time_limit is not None and time.monotonic() - started > time_limit:
                report.stopped_early = True
                break
            target = chosen[i % len(chosen)]
            n = i // len(chosen)
            stats = report.stats[target.name]
            t0 = time.monotonic()
            try:
                example = generate(target, seed, n, seeds)
            except Exception:  # a generator bug skips the example, loudly, and the run goes on
                print(f"generator error on {target.name} #{n}:", file=sys.stderr)
                traceback.print_exc()
                continue
            traced = meter if memory and n % memory_every == 0 else untraced
            if traced is meter:
                example["bare"] = True  # the harness's checks would count as the library's
            failures, ratio = run_one(target, example, n, traced)
            stats.seconds += time.monotonic() - t0
            stats.examples += 1
            stats.peak_ratio = max(stats.peak_ratio, ratio)
            for failure in failures:
                stats.failures[failure.prop] += 1
                family = report.families.get(failure.key)
                if family is None:
                    family = report.families[failure.key] = Family(failure)
                    if failure_dir is not None:
                        keep = None
                        if do_shrink and failure.prop != "hang" and shrink_left > 0:
                            s0 = time.monotonic()
                            try:
                                keep = shrink(target, example, failure, min(8.0, shrink_left))
                            except Exception:  # a shrinker problem must not stop the run
                                traceback.print_exc()
                            spent = time.monotonic() - s0
                            shrink_left -= spent
                            started += spent  # shrinking is not fuzzing time
                        family.shrunk = "yes" if keep is not None else "no"
                        family.reproducer = write_reproducer(
                            failure_dir, seed, family, example, keep
                        )
                family.count += 1
            if progress is not None and (i + 1) % 500 == 0:
                elapsed = time.monotonic() - started
                print(
                    f"  {i + 1} examples, {len(report.families)} families, {elapsed:.0f}s",
                    file=progress,
                    flush=True,
                )
    except KeyboardInterrupt:
        report.stopped_early = True
    finally:
        meter.stop()
    return report


def print_report(report: Report, out: TextIO = sys.stdout) -> None:
    """Per-target counts, then one line per failure family."""
    print(
        f"seed {report.seed!r}; time budget {properties.TIME_BUDGET:g} s per example "
        f"(x{TRACED_SLOWDOWN:g} when traced); memory bound, on every 4th example: "
        f"peak <= {MEMORY_FACTOR} x input bytes + {MEMORY_CONSTANT // 2**20} MiB",
        file=out,
    )
    print(f"{'target':<14} {'examples':>8} {'seconds':>8} {'peak/bound':>10}  failures", file=out)
    for name, s in report.stats.items():
        shown = ", ".join(f"{k}={v}" for k, v in sorted(s.failures.items())) or "-"
        print(
            f"{name:<14} {s.examples:>8} {s.seconds:>8.1f} {s.peak_ratio:>10.2f}  {shown}",
            file=out,
        )
    if report.stopped_early:
        print("(stopped early)", file=out)
    print(
        f"\n{len(report.families)} failure famil{'y' if len(report.families) == 1 else 'ies'}",
        file=out,
    )
    for family in sorted(report.families.values(), key=lambda f: (f.first.target, f.first.prop)):
        f = family.first
        sdk = f" (sdk: {f.sdk_where})" if f.sdk_where and f.sdk_where != f.where else ""
        print(f"- [{f.prop}] {f.target}: {f.exc_type} at {f.where}{sdk} x{family.count}", file=out)
        print(f"    {f.message}", file=out)
        if family.reproducer:
            print(f"    reproducer: {family.reproducer} (shrunk: {family.shrunk})", file=out)
