"""The code generator: provenance, no upstream prose, pins, naming, overlay checks, atomic runs."""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import attrs
import pytest

from codegen import generate as generate_module
from codegen.generate import (
    OVERLAYS,
    GenerationError,
    header,
    module_name,
    prepared_schema,
    sealed_paths,
)
from codegen.imports import drop_unused_imports
from codegen.normalize import NormalizeError, normalize
from codegen.overlay import Overlay, check_overlay, load_overlay, update_classes
from codegen.rules import RULES_FOR, rules_module_text
from codegen.sources import ROOT, Source, SourceError, load_sources, read_source
from tests.needs import spec_dir

SOURCES, TARGETS = load_sources()
TARGET_IDS = sorted(TARGETS)
# every sealed module of each target: its classes, and what is written beside them
SEALED = [
    pytest.param(target, path, id=path.name)
    for target in TARGET_IDS
    for path in sealed_paths(ROOT / TARGETS[target].module)
]


def _schema(source_name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_source(SOURCES[source_name]))
    return data


def needs_schemas(*names: str) -> pytest.MarkDecorator:
    """Marks a test whose ``python -m codegen`` subprocess reads these pinned schemas (a
    schema read in the test's own process skips it by itself when it cannot be had)."""
    return pytest.mark.spec(*(SOURCES[name].mirror for name in names))


def _descriptions(node: Any) -> Iterator[str]:
    """Every ``description`` string anywhere in a JSON document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "description" and isinstance(value, str):
                yield value
            else:
                yield from _descriptions(value)
    elif isinstance(node, list):
        for item in node:
            yield from _descriptions(item)


def _run_codegen(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """``python -m codegen ARGS`` run from ``cwd`` (the repository on the import path)."""
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


# ---- (a) provenance header ----------------------------------------------------------------


@pytest.mark.parametrize(("target", "path"), SEALED)
def test_sealed_module_starts_with_header(target: str, path: Path) -> None:
    """A sealed module's first line is the one-line header naming its source, version and sha256."""
    source = SOURCES[TARGETS[target].source]
    text = path.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    assert first == header(source)
    assert source.name in first and source.version in first and source.sha256 in first
    assert "Do not edit" in first


# ---- (b) no upstream prose ----------------------------------------------------------------


@pytest.mark.parametrize(("target", "path"), SEALED)
def test_no_upstream_prose_in_generated_code(target: str, path: Path) -> None:
    """No schema ``description`` of 40 characters or more is copied into the generated module."""
    source = SOURCES[TARGETS[target].source]
    text = path.read_text(encoding="utf-8")
    prose = {d for d in _descriptions(_schema(source.name)) if len(d) >= 40}
    assert prose, "the schema has no long descriptions; the check would be vacuous"
    copied = sorted(d for d in prose if d in text)
    assert copied == []


# ---- (c) sha256 pins ----------------------------------------------------------------------


def test_sha256_mismatch_names_file_and_hashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A schema whose bytes do not match its pin is an error naming the file and both hashes."""
    source = SOURCES[TARGETS["agui"].source]
    original = spec_dir(source.mirror).read_bytes()
    altered = bytearray(original)
    altered[-2] = ord(" ") if altered[-2] != ord(" ") else ord("\t")
    copied = tmp_path / source.mirror
    copied.parent.mkdir(parents=True)
    copied.write_bytes(bytes(altered))
    monkeypatch.setenv("AGENTPROTO_SPEC_MIRROR", str(tmp_path))
    actual = hashlib.sha256(bytes(altered)).hexdigest()
    with pytest.raises(SourceError) as info:
        read_source(source)
    message = str(info.value)
    assert str(copied) in message
    assert source.sha256 in message
    assert actual in message


# ---- (d) naming rule ----------------------------------------------------------------------

_UNNAMED = {
    "$defs": {
        "U": {
            "anyOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}},
                {"$ref": "#/$defs/B"},
            ]
        },
        "B": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]},
    }
}


def test_unnamed_union_member_fails_with_what_to_add() -> None:
    """A union member without tag or title stops generation, naming it and the names file."""
    with pytest.raises(NormalizeError) as info:
        normalize(copy.deepcopy(_UNNAMED), anchor_base="schema.json")
    message = str(info.value)
    assert "U/0" in message
    assert "names file" in message


def test_names_file_entry_names_the_member() -> None:
    """A names-file entry for the member's location gives the member that class name."""
    schema, info = normalize(
        copy.deepcopy(_UNNAMED), anchor_base="schema.json", names={"U/0": "Named"}
    )
    defs = schema["$defs"]
    assert "Named" in defs
    assert defs["U"] == {"anyOf": [{"$ref": "#/$defs/Named"}, {"$ref": "#/$defs/B"}]}
    assert defs["Named"]["properties"]["a"]["x-ap"]["wire"] == "a"
    assert info["Named"]["anchor"] == "schema.json#U/anyOf/0"


# ---- (e) the AG-UI 1.1 switch -------------------------------------------------------------


@needs_schemas("agui-1-1")
def test_agui_1_1_switch_writes_elsewhere(tmp_path: Path) -> None:
    """``--agui 1.1 --out DIR`` generates AG-UI 1.1 into DIR and leaves the sealed module alone."""
    sealed = ROOT / TARGETS["agui"].module
    before = sealed.read_bytes()
    result = _run_codegen("--agui", "1.1", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    out = tmp_path / "_generated.py"
    text = out.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    assert first == header(SOURCES["agui-1-1"])
    assert "agui-1-1" in first
    assert "\nclass TextMessageStartEvent:" in text
    assert sealed.read_bytes() == before


# ---- (f) generated code is current --------------------------------------------------------


@needs_schemas(*SOURCES)
def test_generated_code_is_up_to_date() -> None:
    """``python -m codegen --check`` regenerates every sealed module and finds no difference."""
    result = _run_codegen("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_rules_go_beside_the_classes_the_descriptions_describe() -> None:
    """The upsert rules are written for the classes module the runtime's entity
    descriptions import, and only for it."""
    from agentproto.acp._state import entities

    assert entities.v2.__name__ == RULES_FOR == module_name(TARGETS["acp_v2"])
    names = {
        path.name for target in TARGET_IDS for path in sealed_paths(ROOT / TARGETS[target].module)
    }
    assert sorted(name for name in names if "_rules" in name) == ["_generated_rules_v2.py"]


def test_descriptions_that_do_not_fit_give_a_module_without_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """When the descriptions do not fit the new classes, the rules module is written without
    rules (the runtime compiles them) and a note carries the runtime's message."""
    from agentproto import UsageError
    from agentproto.acp._state import entities

    def stale(members: Any) -> Any:
        raise UsageError("acp.stale-description", "edit its description in entities.py")

    monkeypatch.setattr(entities, "build_kinds", stale)
    source = SOURCES[TARGETS["acp_v2"].source]
    written = rules_module_text(
        ROOT / TARGETS["acp_v2"].module, RULES_FOR, header(source), source.sha256
    )
    assert written is not None
    text, note = written
    assert note is not None and "edit its description in entities.py" in note
    assert "RULES: Final[dict[type, Rule]] = {\n}" in text
    assert "def _apply_" not in text
    compile(text, "rules", "exec")


# ---- (g) unstable schemas are supersets ---------------------------------------------------


@pytest.mark.parametrize(
    ("stable", "unstable"), [("acp-v2", "acp-v2-unstable"), ("acp-v1", "acp-v1-unstable")]
)
def test_unstable_schema_is_superset_of_stable(stable: str, unstable: str) -> None:
    """Every definition of a stable ACP schema exists in the unstable one the module comes from."""
    stable_defs = set(_schema(stable)["$defs"])
    unstable_defs = set(_schema(unstable)["$defs"])
    assert stable_defs
    assert sorted(stable_defs - unstable_defs) == []


# ---- (h) overlay checks -------------------------------------------------------------------


def test_overlay_check_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upstream change the overlay's checks catch stops generation, naming the overlay."""
    source = SOURCES["acp-v2-unstable"]
    overlay_file = OVERLAYS / "acp-v2-unstable.toml"
    assert source.overlay == overlay_file
    changed = _schema(source.name)
    # a marked patch field that no longer admits null
    changed["$defs"]["ToolCallUpdate"]["properties"]["title"]["type"] = "string"

    def fake_read_source(src: Source) -> bytes:
        assert src == source
        return json.dumps(changed).encode()

    monkeypatch.setattr(generate_module, "read_source", fake_read_source)
    with pytest.raises(GenerationError) as info:
        prepared_schema(source)
    assert f"schema/overlays/{overlay_file.name}" in str(info.value)
    assert "#/$defs/ToolCallUpdate/properties/title" in str(info.value)


def test_overlay_applies_to_the_pinned_schema() -> None:
    """The pinned schema passes every overlay ``test`` op and gets its patch fields marked."""
    schema, _ = prepared_schema(SOURCES["acp-v2-unstable"])
    patched = [
        (name, wire)
        for name, definition in schema["$defs"].items()
        for wire, prop in definition.get("properties", {}).items()
        if prop.get("x-ap", {}).get("patch")
    ]
    assert ("ToolCallUpdate", "name") in patched


def test_tmp_mirror_layout_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mirror folder given by ``AGENTPROTO_SPEC_MIRROR`` is where pinned schemas are read from."""
    source = SOURCES[TARGETS["agui"].source]
    copied = tmp_path / source.mirror
    copied.parent.mkdir(parents=True)
    shutil.copyfile(spec_dir(source.mirror), copied)
    monkeypatch.setenv("AGENTPROTO_SPEC_MIRROR", str(tmp_path))
    assert read_source(source) == copied.read_bytes()


# ---- (i) the overlay says only what the schema cannot, and checks what that needs -------

_PINNED_OVERLAY = (OVERLAYS / "acp-v2-unstable.toml").read_text(encoding="utf-8")


def _overlay_at(tmp_path: Path, text: str) -> Overlay:
    """The overlay parsed from ``text``, written to a file in ``tmp_path``; no load problems."""
    path = tmp_path / "scratch.toml"
    path.write_text(text, encoding="utf-8")
    overlay, problems = load_overlay(replace(SOURCES["acp-v2-unstable"], overlay=path))
    assert problems == []
    return overlay


def _assert_plain(lines: list[str], schema: dict[str, Any]) -> None:
    """Each line is short, names no upstream prose and dumps no schema JSON."""
    prose = {d for d in _descriptions(schema) if len(d) >= 20}
    for line in lines:
        assert "\n" not in line and len(line) < 300, line
        assert "{" not in line, line
        assert not any(d in line for d in prose), line


def test_pinned_overlay_fits_and_classifies_every_nullable_update_field() -> None:
    """The committed overlay fits the pinned schema: no problem, every update class classified."""
    schema = _schema("acp-v2-unstable")
    overlay, problems = load_overlay(SOURCES["acp-v2-unstable"])
    assert problems == []
    assert check_overlay(overlay, schema) == []
    classes, _ = update_classes(overlay, schema["$defs"])
    assert "ToolCallUpdate" in classes and "Notice" in classes and "ContentChunk" in classes
    assert "StateUpdate" not in classes  # a wrapped union is not followed
    assert sum(len(w) for w in overlay.patch.values()) == 43
    assert overlay.patch["UsageUpdate"] == ["cost"]


def test_patch_metadata_follows_the_overlay() -> None:
    """Every ``[patch]`` entry is a field with ``patch`` metadata in the sealed v2 module."""
    from agentproto.acp import _generated_v2 as v2

    overlay, _ = load_overlay(SOURCES["acp-v2-unstable"])
    for cls, wires in overlay.patch.items():
        fields = {f.metadata.get("wire"): f for f in attrs.fields(getattr(v2, cls))}
        for wire in wires:
            assert fields[wire].metadata.get("patch") is True, (cls, wire)
    for cls, wires in overlay.not_patch.items():
        fields = {f.metadata.get("wire"): f for f in attrs.fields(getattr(v2, cls))}
        for wire in wires:
            assert "patch" not in fields[wire].metadata, (cls, wire)


def test_every_overlay_problem_is_reported_in_one_run(tmp_path: Path) -> None:
    """Missing, required, non-null and unclassified entries come back together, one line each."""
    schema = _schema("acp-v2-unstable")
    text = _PINNED_OVERLAY.replace('"name", "title", "kind"', '"name", "title", "kind", "gone"')
    text = text.replace('Notice = ["description", "_meta"]', 'Notice = ["_meta"]')
    text = text.replace('UsageUpdate = ["cost"]', 'UsageUpdate = ["cost", "used"]\nNope = ["x"]')
    schema["$defs"]["TerminalUpdate"]["properties"]["command"]["type"] = "string"
    schema["$defs"]["CompactionUpdate"]["required"].append("error")
    overlay = _overlay_at(tmp_path, text)
    problems = check_overlay(overlay, schema)
    file = str(tmp_path / "scratch.toml")
    expected = [
        ("[patch] ToolCallUpdate[3] 'gone'", "#/$defs/ToolCallUpdate/properties/gone", "not exist"),
        (
            "[patch] TerminalUpdate[0] 'command'",
            "#/$defs/TerminalUpdate/properties/command",
            "null",
        ),
        ("[patch] CompactionUpdate[1] 'error'", "#/$defs/CompactionUpdate/properties/error", "req"),
        ("[patch] UsageUpdate[1] 'used'", "#/$defs/UsageUpdate/properties/used", "required"),
        ("[patch] Nope", "#/$defs/Nope", "does not exist"),
        ("update class Notice", "#/$defs/Notice/properties/description", "[not_patch]"),
    ]
    assert len(problems) == len(expected), problems
    for entry, at, what in expected:
        (line,) = [p for p in problems if entry in p]
        assert line.startswith(file + ": ") and at in line and what in line, line
    _assert_plain(problems, schema)


def test_new_nullable_update_field_must_be_classified(tmp_path: Path) -> None:
    """A new nullable property of an update class stops generation until the overlay lists it."""
    schema = _schema("acp-v2-unstable")
    schema["$defs"]["PlanUpdate"]["properties"]["title"] = {"type": ["string", "null"]}
    overlay, _ = load_overlay(SOURCES["acp-v2-unstable"])
    (problem,) = check_overlay(overlay, schema)
    assert problem.startswith("schema/overlays/acp-v2-unstable.toml: ")
    assert "#/$defs/PlanUpdate/properties/title" in problem and "'title'" in problem
    assert "[patch] or [not_patch]" in problem


def test_not_patch_entries_are_checked(tmp_path: Path) -> None:
    """A ``[not_patch]`` entry naming no property, or one also in ``[patch]``, is a problem."""
    text = _PINNED_OVERLAY.replace(
        'PlanUpdate = ["_meta"]', 'PlanUpdate = ["_meta", "nothing"]\nUserMessage = ["content"]'
    )
    problems = check_overlay(_overlay_at(tmp_path, text), _schema("acp-v2-unstable"))
    assert len(problems) == 2, problems
    assert any("[not_patch] PlanUpdate[1] 'nothing'" in p and "not exist" in p for p in problems)
    assert any("[not_patch] UserMessage[0] 'content'" in p and "[patch]" in p for p in problems)


def test_overlay_structure_problems_name_file_and_entry(tmp_path: Path) -> None:
    """Entries outside the tables, unknown tables and malformed values are each one problem."""
    path = tmp_path / "bad.toml"
    path.write_text(
        '"SessionUpdate/2" = "Stray"\n[unknown]\na = 1\n[patch]\nToolCallUpdate = "name"\n'
        '[names]\n"nope" = "X"\n[update_classes]\nunion = 3\n',
        encoding="utf-8",
    )
    _, problems = load_overlay(replace(SOURCES["acp-v2-unstable"], overlay=path))
    assert len(problems) == 5, problems
    assert all(p.startswith(f"{path}: ") for p in problems)
    stray = next(p for p in problems if "'SessionUpdate/2'" in p)
    assert "entry outside any table" in stray and "[names]" in stray
    assert any("'unknown': unknown table" in p for p in problems)
    assert any("[patch] ToolCallUpdate: expected a list" in p for p in problems)
    assert any('"<Union>/<index>" = "<ClassName>"' in p for p in problems)
    assert any("[update_classes] 'union'" in p for p in problems)


# ---- (j) the names file ------------------------------------------------------------------


def test_unnamed_member_names_the_file_and_the_line_to_add() -> None:
    """The unnamed-member problem names the names file, the pointer and the exact line."""
    with pytest.raises(NormalizeError) as info:
        normalize(copy.deepcopy(_UNNAMED), anchor_base="schema.json", names_file="x.toml")
    (line,) = str(info.value).splitlines()
    assert line.startswith("x.toml: #/$defs/U/anyOf/0: ")
    assert 'under [names] in the names file: "U/0" = "<Name>"' in line


def test_taken_name_and_stray_names_entries_are_problems() -> None:
    """A names entry giving a taken name, and one naming no member, are reported together."""
    with pytest.raises(NormalizeError) as info:
        normalize(
            copy.deepcopy(_UNNAMED),
            anchor_base="schema.json",
            names={"U/0": "B", "U/1": "Other", "U/9": "Far"},
            names_file="x.toml",
        )
    lines = str(info.value).splitlines()
    assert len(lines) == 3, lines
    assert any("#/$defs/U/anyOf/0" in p and "'B' is taken" in p and '"U/0" = ' in p for p in lines)
    assert any('[names] "U/1": names no anonymous union member' in p for p in lines)
    assert any('[names] "U/9": names no anonymous union member' in p for p in lines)
    assert all(p.startswith("x.toml: ") for p in lines)


def test_unsupported_shapes_are_reported_together() -> None:
    """Shapes the normaliser cannot represent are collected with the naming problems."""
    schema = {
        "$defs": {
            "A": {
                "type": "object",
                "properties": {"o": {"type": "object", "properties": {"x": {"type": "string"}}}},
            },
            "V": {"anyOf": [{"not": {"type": "string"}}, {"$ref": "#/$defs/A"}]},
            **copy.deepcopy(_UNNAMED["$defs"]),
        }
    }
    with pytest.raises(NormalizeError) as info:
        normalize(schema, anchor_base="schema.json")
    lines = str(info.value).splitlines()
    assert len(lines) == 3, lines
    assert any(p.startswith("AO: inline object property;") for p in lines)
    assert any(p.startswith("V/0: union member of unknown shape;") for p in lines)
    assert any("#/$defs/U/anyOf/0" in p for p in lines)


# ---- (k) overlays are bound explicitly -----------------------------------------------------


def _sources_toml(tmp_path: Path, overlay_line: str) -> Path:
    (tmp_path / "overlays").mkdir()
    path = tmp_path / "sources.toml"
    path.write_text(
        f'[s]\nprotocol = "acp"\nversion = "v"\nmirror = "m.json"\nurl = "https://x"\n'
        f'sha256 = "0"\n{overlay_line}\n',
        encoding="utf-8",
    )
    return path


def test_source_naming_a_missing_overlay_is_an_error(tmp_path: Path) -> None:
    """A source whose ``overlay`` file does not exist stops loading, naming the entry."""
    path = _sources_toml(tmp_path, 'overlay = "overlays/absent.toml"')
    with pytest.raises(SourceError) as info:
        load_sources(path)
    assert "[s] overlay = 'overlays/absent.toml': no such file" in str(info.value)


def test_overlay_no_source_names_is_an_error(tmp_path: Path) -> None:
    """An overlay file that no source binds stops loading, saying what line to add."""
    path = _sources_toml(tmp_path, "")
    (tmp_path / "overlays" / "orphan.toml").write_text("", encoding="utf-8")
    with pytest.raises(SourceError) as info:
        load_sources(path)
    assert "orphan.toml: no source names this overlay" in str(info.value)
    assert 'overlay = "overlays/orphan.toml"' in str(info.value)


# ---- (l) regeneration is atomic, from a file at hand, from any cwd -------------------------


@needs_schemas("acp-v2")
def test_acp_file_at_hand_generates_into_out_from_any_cwd(tmp_path: Path) -> None:
    """``--acp PATH --out DIR`` from another folder writes the v2 module; its header names PATH."""
    schema_file = tmp_path / "new" / "schema.unstable.json"
    schema_file.parent.mkdir()
    schema_file.write_bytes(read_source(SOURCES["acp-v2-unstable"]))
    result = _run_codegen("--acp", "new/schema.unstable.json", "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    names = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*.py"))
    assert names == [
        "_generated_loaders_v2.py",
        "_generated_v2.py",
        "_state/_generated_rules_v2.py",
    ]
    module = ROOT / TARGETS["acp_v2"].module
    for sealed_path in sealed_paths(module):
        name = sealed_path.relative_to(module.parent)
        first, rest = (tmp_path / "out" / name).read_text(encoding="utf-8").split("\n", 1)
        digest = hashlib.sha256(schema_file.read_bytes()).hexdigest()
        assert str(schema_file) in first and digest in first and "Do not edit" in first
        sealed = sealed_path.read_text(encoding="utf-8")
        assert rest == sealed.split("\n", 1)[1]


@needs_schemas("acp-v1")
def test_agui_and_acp_v1_files_at_hand(tmp_path: Path) -> None:
    """``--agui PATH --acp-v1 PATH --out DIR`` writes exactly the modules of those two
    (AG-UI's with its native loaders) from those files."""
    agui = tmp_path / "schema.json"
    agui.write_bytes(read_source(SOURCES[TARGETS["agui"].source]))
    v1 = tmp_path / "schema.unstable.json"
    v1.write_bytes(read_source(SOURCES[TARGETS["acp_v1"].source]))
    result = _run_codegen("--agui", str(agui), "--acp-v1", str(v1), "--out", "out", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [
        "_generated.py",
        "_generated_loaders.py",
        "_generated_loaders_v1.py",
        "_generated_native.py",
        "_generated_v1.py",
    ]
    for name, file in (
        ("_generated.py", agui),
        ("_generated_loaders.py", agui),
        ("_generated_native.py", agui),
        ("_generated_v1.py", v1),
        ("_generated_loaders_v1.py", v1),
    ):
        first = (out / name).read_text(encoding="utf-8").split("\n", 1)[0]
        assert str(file) in first and hashlib.sha256(file.read_bytes()).hexdigest() in first


@needs_schemas("agui-draft")
def test_failing_generation_writes_nothing(tmp_path: Path) -> None:
    """A failing ACP generation leaves the AG-UI module, generated first, untouched."""
    broken = _schema("acp-v2-unstable")
    del broken["$defs"]["ToolCallUpdate"]["properties"]["kind"]
    schema_file = tmp_path / "broken.json"
    schema_file.write_text(json.dumps(broken), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "_generated.py").write_text("# sentinel\n", encoding="utf-8")
    sealed = ROOT / TARGETS["agui"].module
    before = sealed.stat()
    result = _run_codegen(
        "--agui", "draft", "--acp", str(schema_file), "--out", "out", cwd=tmp_path
    )
    assert result.returncode == 1
    assert "#/$defs/ToolCallUpdate/properties/kind does not exist" in result.stderr
    assert "nothing written" in result.stderr
    assert (out / "_generated.py").read_text(encoding="utf-8") == "# sentinel\n"
    assert sorted(p.name for p in out.iterdir()) == ["_generated.py"]
    result = _run_codegen("--agui", "draft", "--acp", str(schema_file), cwd=tmp_path)
    assert result.returncode == 1
    after = sealed.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


# ---- (m) no generated module imports what it does not use ---------------------------------


@pytest.mark.parametrize(("target", "path"), SEALED)
def test_sealed_module_imports_only_what_it_uses(target: str, path: Path) -> None:
    """Every name a sealed module imports (``__future__`` aside) is read somewhere in it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    imported = [
        (alias.asname or alias.name).split(".")[0]
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        and getattr(node, "module", "") != "__future__"
        for alias in node.names
    ]
    assert imported
    assert sorted(name for name in imported if name not in read) == []


def test_drop_unused_imports_keeps_used_names() -> None:
    """The pipeline step drops unused names (whole lines when none is left) and keeps the rest."""
    text = (
        "from __future__ import annotations\n\nfrom dataclasses import dataclass\n"
        "from typing import Any, ClassVar\nimport attrs\n\nx: ClassVar[int] = attrs.NOTHING\n"
    )
    assert drop_unused_imports(text) == (
        "from __future__ import annotations\n\nfrom typing import ClassVar\nimport attrs\n\n"
        "x: ClassVar[int] = attrs.NOTHING\n"
    )
