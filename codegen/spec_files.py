"""``python -m codegen.spec_files``: regenerate ``schema/spec-files.tsv`` from a spec mirror.

The table pins every upstream file the tests read (fixtures, conformance corpora, the
RFC 6902 cases): one row per file of the mirror, but the mirror's own ``README.md`` and
the schemas ``schema/sources.toml`` already pins. A row is the file's mirror path, its
sha256 and the URL it is published at (``raw.githubusercontent.com/<owner>/<repo>/<full
commit>/<upstream path>``), which is where the tests download it from when no mirror is
at hand.

A file whose bytes did not change keeps its URL. A new or changed file takes its URL
from the ``--origin PREFIX=URL`` rule with the longest prefix it starts with (its path
past the prefix is appended to the URL); without one the run fails, naming the file.
Rows of files gone from the mirror are dropped. ``--check`` writes nothing and exits 1
when the table is not what the mirror gives.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path

from codegen.sources import (
    SOURCES_TOML,
    SPEC_FILES,
    Pin,
    SourceError,
    load_sources,
    read_pin_table,
    spec_mirror,
)

HEADER = """\
# Upstream files the tests read, pinned: <mirror path> TAB <sha256> TAB <url>.
# The schemas are pinned in sources.toml. Each file is read from the spec mirror
# (AGENTPROTO_SPEC_MIRROR, else ../shared/spec), else from .cache/spec/, else
# downloaded from its URL there; the sha256 is always checked (codegen/sources.py).
# Regenerate from a mirror: python -m codegen.spec_files [--origin PREFIX=URL ...]
"""

MIRROR_OWN = {"README.md"}
"""Files of the mirror that are its own description, not upstream material."""


def mirror_files(mirror: Path, sources: Path = SOURCES_TOML) -> dict[str, bytes]:
    """The upstream files of a mirror the table pins, by mirror path."""
    loaded, _ = load_sources(sources)
    schemas = {source.mirror for source in loaded.values()}
    files = {}
    for path in sorted(mirror.rglob("*")):
        relative = path.relative_to(mirror).as_posix()
        if path.is_file() and relative not in MIRROR_OWN and relative not in schemas:
            files[relative] = path.read_bytes()
    return files


def regenerate(
    files: Mapping[str, bytes], current: list[Pin], origins: Mapping[str, str]
) -> list[Pin]:
    """The table for ``files``: unchanged files keep their URL, the rest follow ``origins``.

    Raises:
        SourceError: every new or changed file no origin covers, one per line.
    """
    known = {pin.path: pin for pin in current}
    pins: list[Pin] = []
    uncovered: list[str] = []
    for path, data in sorted(files.items()):
        sha256 = hashlib.sha256(data).hexdigest()
        old = known.get(path)
        if old is not None and old.sha256 == sha256:
            pins.append(old)
            continue
        prefix = max((p for p in origins if path.startswith(p)), key=len, default=None)
        if prefix is None:
            state = "changed" if old is not None else "new"
            uncovered.append(f"{path} ({state}): no --origin covers it")
            continue
        pins.append(Pin(path=path, sha256=sha256, url=origins[prefix] + path[len(prefix) :]))
    if uncovered:
        raise SourceError("\n".join(uncovered))
    return pins


def table_text(pins: list[Pin]) -> str:
    """The table file's text: the header, then one sorted row per pin."""
    rows = [f"{pin.path}\t{pin.sha256}\t{pin.url}\n" for pin in sorted(pins, key=lambda p: p.path)]
    return HEADER + "".join(rows)


def _origin(text: str) -> tuple[str, str]:
    prefix, sep, url = text.partition("=")
    if not sep or not prefix or not url:
        raise argparse.ArgumentTypeError(f"{text!r}: expected PREFIX=URL")
    return prefix, url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codegen.spec_files", description=__doc__)
    parser.add_argument("--mirror", type=Path, help="the spec mirror (default: as the tests)")
    parser.add_argument("--table", type=Path, default=SPEC_FILES, help="the pin table")
    parser.add_argument(
        "--origin",
        type=_origin,
        action="append",
        default=[],
        metavar="PREFIX=URL",
        help="where new or changed files under PREFIX are published (repeatable)",
    )
    parser.add_argument("--check", action="store_true", help="fail if the table is stale")
    args = parser.parse_args(argv)
    mirror = args.mirror or spec_mirror()
    if mirror is None or not mirror.is_dir():
        print("no spec mirror: pass --mirror or set AGENTPROTO_SPEC_MIRROR", file=sys.stderr)
        return 2
    try:
        current = read_pin_table(args.table) if args.table.is_file() else []
    except SourceError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        pins = regenerate(mirror_files(mirror), current, dict(args.origin))
    except SourceError as exc:  # files changed or added with nowhere to fetch them from
        print(exc, file=sys.stderr)
        return 1 if args.check else 2
    text = table_text(pins)
    old = args.table.read_text(encoding="utf-8") if args.table.is_file() else ""
    if args.check:
        if text != old:
            print(f"{args.table} is stale: run python -m codegen.spec_files", file=sys.stderr)
            return 1
        return 0
    if text != old:
        args.table.write_text(text, encoding="utf-8")
    print(f"{args.table}: {len(pins)} files pinned")
    return 0


if __name__ == "__main__":
    sys.exit(main())
