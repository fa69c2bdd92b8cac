"""The code generator: provenance headers, no upstream prose, pins, naming and overlay rules."""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codegen import generate as generate_module
from codegen.generate import OVERLAYS, GenerationError, header, prepared_schema
from codegen.normalize import NormalizeError, normalize
from codegen.sources import ROOT, Source, SourceError, load_sources, read_source
from tests.conftest import mirror_dir

SOURCES, TARGETS = load_sources()
TARGET_IDS = sorted(TARGETS)


def _schema(source_name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read_source(SOURCES[source_name]))
    return data


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


def _pointer_parent(doc: Any, pointer: str) -> tuple[Any, str]:
    """The container a JSON Pointer points into, and the last token."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    for token in tokens[:-1]:
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc, tokens[-1]


def _run_codegen(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


# ---- (a) provenance header ----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGET_IDS)
def test_sealed_module_starts_with_header(target: str) -> None:
    """A sealed module's first line is the one-line header naming its source, version and sha256."""
    source = SOURCES[TARGETS[target].source]
    text = (ROOT / TARGETS[target].module).read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    assert first == header(source)
    assert source.name in first and source.version in first and source.sha256 in first
    assert "Do not edit" in first


# ---- (b) no upstream prose ----------------------------------------------------------------


@pytest.mark.parametrize("target", TARGET_IDS)
def test_no_upstream_prose_in_generated_code(target: str) -> None:
    """No schema ``description`` of 40 characters or more is copied into the generated module."""
    source = SOURCES[TARGETS[target].source]
    text = (ROOT / TARGETS[target].module).read_text(encoding="utf-8")
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
    original = (mirror_dir() / source.mirror).read_bytes()
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


def test_generated_code_is_up_to_date() -> None:
    """``python -m codegen --check`` regenerates every sealed module and finds no difference."""
    result = _run_codegen("--check")
    assert result.returncode == 0, result.stdout + result.stderr


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


# ---- (h) overlay test ops -----------------------------------------------------------------


def test_overlay_test_op_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """An upstream change an overlay ``test`` op catches stops generation, naming the overlay."""
    source = SOURCES["acp-v2-unstable"]
    overlay_file = OVERLAYS / f"{source.name}.json"
    ops = json.loads(overlay_file.read_text(encoding="utf-8"))
    test_op = next(op for op in ops if op["op"] == "test")
    schema = _schema(source.name)
    changed = copy.deepcopy(schema)
    parent, last = _pointer_parent(changed, test_op["path"])
    assert parent[last] == test_op["value"]
    parent[last] = "changed-upstream"

    def fake_read_source(src: Source) -> bytes:
        assert src == source
        return json.dumps(changed).encode()

    monkeypatch.setattr(generate_module, "read_source", fake_read_source)
    with pytest.raises(GenerationError) as info:
        prepared_schema(source)
    assert f"schema/overlays/{overlay_file.name}" in str(info.value)


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
    shutil.copyfile(mirror_dir() / source.mirror, copied)
    monkeypatch.setenv("AGENTPROTO_SPEC_MIRROR", str(tmp_path))
    assert read_source(source) == copied.read_bytes()
