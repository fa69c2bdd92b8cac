"""``python -m codegen``: regenerate the sealed modules, all of them or none.

Every module is generated into a temporary folder first; the sealed modules (or the
``--out`` folder) are replaced only when every generation succeeded, so a failing
schema never leaves a half-regenerated SDK behind. ``--agui``, ``--acp`` and
``--acp-v1`` pick targets and where their schema comes from (a pinned version name
for AG-UI, or a schema file at hand, whose header then names the file and its
sha256); without them every target is generated from its pin.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
import tempfile
from pathlib import Path

# the loaders modules are written by the runtime's own converter: the runtime this
# repository holds (sdk/) is the one imported, whatever else is installed
_SDK = str(Path(__file__).resolve().parent.parent / "sdk")
if _SDK not in sys.path:
    sys.path.insert(0, _SDK)

from codegen.generate import GenerationError, generate, module_name, sealed_paths  # noqa: E402
from codegen.sources import (  # noqa: E402
    ROOT,
    Source,
    SourceError,
    Target,
    file_source,
    load_sources,
)

AGUI_VERSIONS = {"draft": "agui-draft", "1.1": "agui-1-1"}
# command-line option → target it picks
TARGET_OPTIONS = {"agui": "agui", "acp": "acp_v2", "acp_v1": "acp_v1"}

Job = tuple[Source, Path, str]
"""(source, where its classes module goes, the dotted name it is imported as)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m codegen", description=__doc__)
    parser.add_argument(
        "--check",
        action="store_true",
        help="regenerate into a temporary folder and fail on any difference",
    )
    parser.add_argument(
        "--agui",
        metavar="VERSION|PATH",
        help=f"generate AG-UI from a pinned version ({', '.join(AGUI_VERSIONS)}) or a file",
    )
    parser.add_argument("--acp", metavar="PATH", type=Path, help="generate ACP v2 from this file")
    parser.add_argument(
        "--acp-v1", metavar="PATH", type=Path, help="generate ACP v1 from this file"
    )
    parser.add_argument(
        "--out", type=Path, help="folder to write into instead of the sealed modules"
    )
    return parser


def _source(option: str, value: str | Path, pinned: Source, sources: dict[str, Source]) -> Source:
    """The source an option picks: a pinned AG-UI version name, else a file at hand."""
    if option == "agui" and str(value) in AGUI_VERSIONS:
        return sources[AGUI_VERSIONS[str(value)]]
    path = Path(value)
    if not path.is_file():
        raise SourceError(f"--{option.replace('_', '-')} {value}: no such schema file")
    return file_source(pinned, path)


def _jobs(
    args: argparse.Namespace, sources: dict[str, Source], targets: dict[str, Target]
) -> list[Job]:
    """(source, destination) of every module this run generates."""
    picked = {o: getattr(args, o) for o in TARGET_OPTIONS if getattr(args, o) is not None}
    jobs: list[Job] = []
    for target in targets.values():
        source = sources[target.source]
        option = next((o for o, t in TARGET_OPTIONS.items() if t == target.name), None)
        if picked and option not in picked:
            continue
        if option in picked:
            source = _source(option, picked[option], source, sources)
        module = ROOT / target.module
        dest = args.out / module.name if args.out else module
        jobs.append((source, dest, module_name(target)))
    return jobs


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (1 on any problem, each printed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        sources, targets = load_sources()
        pinned_agui = AGUI_VERSIONS.get(str(args.agui), targets["agui"].source)
        if args.agui and args.out is None and pinned_agui != targets["agui"].source:
            parser.error("--agui other than the pinned version needs --out")
        jobs = _jobs(args, sources, targets)
        with tempfile.TemporaryDirectory() as tmp:
            fresh = _generate_all(jobs, Path(tmp))
            if args.check:
                return _check(jobs, fresh)
            for (source, dest, _), new in zip(jobs, fresh, strict=True):
                for new_path, dest_path in _pair(new, dest):
                    _replace(new_path, dest_path)
                    print(f"wrote {dest_path} from {source.name}")
    except (GenerationError, SourceError) as exc:
        print(f"codegen: nothing written; problems:\n{exc}", file=sys.stderr)
        return 1
    return 0


def _generate_all(jobs: list[Job], tmp: Path) -> list[Path]:
    """Generate every job into ``tmp``; all problems of every job are raised together."""
    problems: list[str] = []
    fresh: list[Path] = []
    for index, (source, dest, module) in enumerate(jobs):
        out = tmp / str(index) / dest.name
        out.parent.mkdir()
        try:
            generate(source, out, module)
        except GenerationError as exc:
            problems += exc.problems
        except SourceError as exc:
            problems += str(exc).splitlines()
        fresh.append(out)
    if problems:
        raise GenerationError(problems)
    return fresh


def _pair(new: Path, dest: Path) -> list[tuple[Path, Path]]:
    """The files of one job (classes, loaders, native loaders and rules if any):
    (generated, destination)."""
    return [(path, dest.parent / path.relative_to(new.parent)) for path in sealed_paths(new)]


def _replace(new: Path, dest: Path) -> None:
    """Put ``new`` at ``dest`` in one rename (a reader sees the old or the new file)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staged = dest.with_name(f".{dest.name}.new")
    shutil.copyfile(new, staged)
    os.replace(staged, dest)


def _check(jobs: list[Job], fresh: list[Path]) -> int:
    status = 0
    pairs = [
        pair for (_, dest, _), new in zip(jobs, fresh, strict=True) for pair in _pair(new, dest)
    ]
    for new_path, module in pairs:
        old = module.read_text(encoding="utf-8") if module.is_file() else ""
        new = new_path.read_text(encoding="utf-8")
        shown = module.relative_to(ROOT) if module.is_relative_to(ROOT) else module
        if old != new:
            status = 1
            diff = difflib.unified_diff(
                old.splitlines(), new.splitlines(), str(module), "regenerated", lineterm="", n=1
            )
            print("\n".join(list(diff)[:80]))
            print(f"codegen --check: {shown} is out of date")
        else:
            print(f"codegen --check: {shown} is up to date")
    return status


if __name__ == "__main__":
    sys.exit(main())
