"""``python -m codegen [--check] [--agui VERSION --out DIR]``: regenerate the sealed modules."""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
from pathlib import Path

from codegen.generate import GenerationError, generate
from codegen.normalize import NormalizeError
from codegen.sources import ROOT, Source, SourceError, load_sources

AGUI_VERSIONS = {"draft": "agui-draft", "1.1": "agui-1-1"}


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary folder and fail on any difference",
    )
    parser.add_argument(
        "--agui",
        choices=sorted(AGUI_VERSIONS),
        help="generate only AG-UI, from this schema version",
    )
    parser.add_argument(
        "--out", type=Path, help="folder to write into instead of the sealed modules"
    )
    args = parser.parse_args(argv)
    sources, targets = load_sources()
    if args.agui and args.out is None and AGUI_VERSIONS[args.agui] != targets["agui"].source:
        parser.error("--agui other than the pinned target needs --out (never over sealed modules)")
    jobs = []
    for target in targets.values():
        source = sources[target.source]
        if args.agui:
            if target.name != "agui":
                continue
            source = sources[AGUI_VERSIONS[args.agui]]
        jobs.append((source, ROOT / target.module))
    try:
        if args.check:
            return _check(jobs)
        for source, module in jobs:
            out = args.out / module.name if args.out else module
            out.parent.mkdir(parents=True, exist_ok=True)
            generate(source, out)
            print(f"wrote {out} from {source.name}")
    except (GenerationError, NormalizeError, SourceError) as exc:
        print(f"codegen: {exc}", file=sys.stderr)
        return 1
    return 0


def _check(jobs: list[tuple[Source, Path]]) -> int:
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for source, module in jobs:
            fresh = Path(tmp) / module.name
            generate(source, fresh)
            old = module.read_text(encoding="utf-8") if module.is_file() else ""
            new = fresh.read_text(encoding="utf-8")
            if old != new:
                status = 1
                diff = difflib.unified_diff(
                    old.splitlines(), new.splitlines(), str(module), "regenerated", lineterm="", n=1
                )
                print("\n".join(list(diff)[:80]))
                print(f"codegen --check: {module.relative_to(ROOT)} is out of date")
            else:
                print(f"codegen --check: {module.relative_to(ROOT)} is up to date")
    return status


if __name__ == "__main__":
    sys.exit(main())
