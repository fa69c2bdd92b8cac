"""``python -m tests.fuzz``: the command line of the fuzzer (see :mod:`tests.fuzz.runner`)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from codegen.sources import SourceError, fetch_spec
from tests.fuzz import properties
from tests.fuzz.mutate import SEED_CORPORA, load_seeds
from tests.fuzz.runner import DEFAULT_FAILURE_DIR, fuzz, generate, print_report, reproduce, run_one
from tests.fuzz.targets import TARGETS


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fuzzer; exit status 1 when any property failed."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--examples", type=int, default=2000, help="examples in all (round robin)")
    parser.add_argument("--seed", default="0", help="run seed (any string)")
    parser.add_argument(
        "--target", action="append", choices=sorted(TARGETS), help="only this target (repeatable)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the report as JSON")
    parser.add_argument(
        "--failures", type=Path, default=DEFAULT_FAILURE_DIR, help="folder for reproducers"
    )
    parser.add_argument("--time-limit", type=float, metavar="SECONDS", help="stop after this long")
    parser.add_argument(
        "--budget", type=float, default=properties.TIME_BUDGET, help="seconds per example"
    )
    parser.add_argument("--no-memory", action="store_true", help="skip tracemalloc")
    parser.add_argument("--no-shrink", action="store_true", help="do not shrink reproducers")
    parser.add_argument("--index", type=int, help="run only this example of --target")
    parser.add_argument("--reproduce", type=Path, metavar="FILE", help="replay a reproducer")
    parser.add_argument("--list", action="store_true", help="list the targets")
    args = parser.parse_args(argv)
    if args.list:
        for name, target in TARGETS.items():
            print(f"{name:<14} {target.doc}")
        return 0
    properties.TIME_BUDGET = args.budget
    try:
        seeds = load_seeds(fetch_spec(*SEED_CORPORA))
    except SourceError as exc:
        print(f"the fuzzer's seed corpora cannot be had: {exc}", file=sys.stderr)
        return 2
    if args.reproduce is not None:
        return reproduce(args.reproduce, seeds)
    names = args.target or list(TARGETS)
    if args.index is not None:
        status = 0
        meter = properties.MemoryMeter(not args.no_memory)
        for name in names:
            target = TARGETS[name]
            failures, _ = run_one(
                target, generate(target, args.seed, args.index, seeds), args.index, meter
            )
            for failure in failures:
                status = 1
                print(f"[{failure.prop}] {failure.exc_type} at {failure.where}: {failure.message}")
                print(failure.traceback_tail)
        return status
    report = fuzz(
        examples=args.examples,
        seed=args.seed,
        targets=names,
        seeds=seeds,
        memory=not args.no_memory,
        failure_dir=args.failures,
        time_limit=args.time_limit,
        do_shrink=not args.no_shrink,
        progress=sys.stderr,
    )
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=2) + "\n", encoding="utf-8")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
