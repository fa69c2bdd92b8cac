"""The pin table of the upstream files the tests read (``schema/spec-files.tsv``) and the
maintainer command that regenerates it from a mirror (``python -m codegen.spec_files``)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from codegen import spec_files
from codegen.sources import (
    SPEC_FILES,
    Pin,
    SourceError,
    load_pins,
    load_sources,
    read_pin_table,
)
from tests.needs import spec_root

COMMIT_URL = re.compile(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+")
NPM_URL = re.compile(r"npm:(@[\w.-]+/)?[\w.-]+@\d+\.\d+\.\d+#\S+")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_table_pins_exactly_the_spec_material() -> None:
    """Every upstream file of the spec material has a row with its sha256, and no row
    names a file the material lacks: the table is what the maintainer command writes."""
    root = spec_root()
    current = read_pin_table()
    assert spec_files.regenerate(spec_files.mirror_files(root), current, {}) == current
    assert spec_files.table_text(current) == SPEC_FILES.read_text(encoding="utf-8")


def test_every_url_names_a_full_commit_or_an_npm_version() -> None:
    """A pinned URL is a file at a full commit sha of its repository (never a branch or a
    short sha), or a file in an exact npm package version."""
    for pin in load_pins().values():
        assert COMMIT_URL.fullmatch(pin.url) or NPM_URL.fullmatch(pin.url), pin


def test_the_special_cases_keep_their_upstream_paths() -> None:
    """The fixture the mirror files under ``invalid/`` is fetched from upstream's
    ``valid/``; the 59 forked draft streams come from jasonkneen/ag-ui."""
    pins = {pin.path: pin for pin in read_pin_table()}
    moved = pins["agui/draft/fixtures/TextMessageEndEvent/invalid/raw-event-null.json"]
    assert moved.url.endswith("/spec/draft/fixtures/TextMessageEndEvent/valid/raw-event-null.json")
    forked = [p for p in pins.values() if "/jasonkneen/ag-ui/" in p.url]
    assert len(forked) == 59
    assert all(p.path.startswith("agui/draft/conformance/streams/") for p in forked)


def _mirror(tmp_path: Path, files: dict[str, bytes]) -> Path:
    mirror = tmp_path / "mirror"
    for path, data in files.items():
        (mirror / path).parent.mkdir(parents=True, exist_ok=True)
        (mirror / path).write_bytes(data)
    return mirror


def test_the_mirror_readme_and_the_schemas_are_not_rows(tmp_path: Path) -> None:
    """The mirror's own README and the schemas sources.toml pins get no row."""
    schema = next(iter(load_sources()[0].values())).mirror
    mirror = _mirror(
        tmp_path, {"README.md": b"mine", schema: b"{}", "agui/x/README.md": b"upstream"}
    )
    assert sorted(spec_files.mirror_files(mirror)) == ["agui/x/README.md"]


def test_unchanged_files_keep_their_url_the_rest_follow_the_longest_origin() -> None:
    """A file with the pinned bytes keeps its URL (even one no rule would give); a new or
    changed one takes the URL of the longest matching ``--origin`` prefix."""
    kept = Pin(path="a/kept.json", sha256=_sha(b"1"), url="https://h/o/r/old/elsewhere.json")
    changed = Pin(path="a/b/changed.json", sha256=_sha(b"old"), url="https://h/o/r/old/changed")
    files = {"a/kept.json": b"1", "a/b/changed.json": b"new", "a/new.json": b"2"}
    origins = {"a/": "https://h/o/r/c1/spec/", "a/b/": "https://h/o/r/c2/other/"}
    pins = spec_files.regenerate(files, [kept, changed], origins)
    assert pins == [
        Pin(
            path="a/b/changed.json", sha256=_sha(b"new"), url="https://h/o/r/c2/other/changed.json"
        ),
        kept,
        Pin(path="a/new.json", sha256=_sha(b"2"), url="https://h/o/r/c1/spec/new.json"),
    ]


def test_files_without_an_origin_are_all_named() -> None:
    """New or changed files no ``--origin`` covers fail the run, every one named."""
    old = Pin(path="a/old.json", sha256=_sha(b"1"), url="https://h/old.json")
    files = {"a/old.json": b"changed", "b/new.json": b"2"}
    with pytest.raises(SourceError) as info:
        spec_files.regenerate(files, [old], {"c/": "https://h/"})
    assert str(info.value).splitlines() == [
        "a/old.json (changed): no --origin covers it",
        "b/new.json (new): no --origin covers it",
    ]


def test_rows_of_files_gone_from_the_mirror_are_dropped() -> None:
    """A pinned file the mirror no longer has loses its row."""
    gone = Pin(path="a/gone.json", sha256=_sha(b"1"), url="https://h/gone.json")
    assert spec_files.regenerate({}, [gone], {}) == []


def test_malformed_rows_are_reported_together(tmp_path: Path) -> None:
    """Every bad row (field count, path leaving the mirror, hash, URL) is reported with
    its line number in one error."""
    table = tmp_path / "pins.tsv"
    good = _sha(b"x")
    table.write_text(
        "# comment\n"
        f"a.json\t{good}\n"
        f"../escape.json\t{good}\thttps://h/x\n"
        "b.json\tABC\thttps://h/x\n"
        f"c.json\t{good}\tftp://h/x\n",
        encoding="utf-8",
    )
    with pytest.raises(SourceError) as info:
        read_pin_table(table)
    lines = str(info.value).splitlines()
    assert [line.split(":")[1] for line in lines] == ["2", "3", "4", "5"]


def test_a_path_pinned_twice_is_an_error(tmp_path: Path) -> None:
    """A table row for a file sources.toml already pins is an error."""
    schema = next(iter(load_sources()[0].values()))
    table = tmp_path / "pins.tsv"
    table.write_text(f"{schema.mirror}\t{schema.sha256}\t{schema.url}\n", encoding="utf-8")
    with pytest.raises(SourceError, match="pinned twice"):
        load_pins(table)


def test_the_command_writes_the_table_and_checks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``python -m codegen.spec_files`` writes the table from a mirror and ``--check``
    passes on it, then fails once a mirror file changes."""
    mirror = _mirror(tmp_path, {"x/a.json": b"1", "x/y/b.json": b"2"})
    table = tmp_path / "pins.tsv"
    base = ["--mirror", str(mirror), "--table", str(table)]
    assert spec_files.main([*base, "--origin", "x/=https://h/o/r/c/spec/"]) == 0
    assert read_pin_table(table) == [
        Pin(path="x/a.json", sha256=_sha(b"1"), url="https://h/o/r/c/spec/a.json"),
        Pin(path="x/y/b.json", sha256=_sha(b"2"), url="https://h/o/r/c/spec/y/b.json"),
    ]
    assert spec_files.main([*base, "--check"]) == 0
    (mirror / "x/a.json").write_bytes(b"3")
    assert spec_files.main([*base, "--check"]) == 1
    assert spec_files.main(base) == 2  # changed, and no --origin says where it comes from
    assert "x/a.json (changed): no --origin covers it" in capsys.readouterr().err
