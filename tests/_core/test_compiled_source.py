"""Code compiled at run time is readable: tracebacks show its lines, and it prints.

The converter compiles the loader and dumper of a class no sealed module holds (one a
caller brings); that source is registered with ``linecache`` under a name of its own,
so a traceback through it shows the failing line, and ``loader_source`` /
``dumper_source`` print what runs, compiled or read from a sealed module.
"""

from __future__ import annotations

import linecache
import sys
import traceback
from pathlib import Path
from typing import Any

import attrs
import pytest

from agentproto import SchemaError
from agentproto._core.wire.converter import (
    WireConverter,
    dumper_source,
    loader_source,
    python_context,
)
from agentproto._core.wire.source import compile_source, function_source
from agentproto.acp import _generated_loaders_v2, make_converter, schema


@attrs.define(kw_only=True)
class Point:
    """A class a caller brings: no sealed module holds its loader."""

    x: int = attrs.field(metadata={"wire": "x", "required": True})
    label: str | None = attrs.field(default=None, metadata={"wire": "label"})
    extra: dict[str, Any] | None = attrs.field(default=None, metadata={"extra": True})


def _converter() -> WireConverter:
    return WireConverter(sys.modules[__name__])


def _traceback(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def test_a_failing_compiled_loader_shows_its_line_in_the_traceback() -> None:
    """A loader compiled at run time names its class in the traceback, with the line that failed."""
    loader = _converter().loader(Point)
    with pytest.raises(SchemaError) as caught:
        loader({"x": 1, "label": 5}, "", python_context(None))
    text = _traceback(caught.value)
    assert f'File "<agentproto loader {__name__}.Point>", line ' in text
    assert "raise type_error('string', v, p + '/label')" in text


def test_a_failing_compiled_dumper_shows_its_line_in_the_traceback() -> None:
    """A dumper compiled at run time shows its lines too."""
    converter = _converter()
    with pytest.raises(AttributeError) as caught:
        converter.dump(Point.__new__(Point))  # no slot set: the dumper's first read fails
    text = _traceback(caught.value)
    assert f'File "<agentproto dumper {__name__}.Point>", line ' in text
    assert "d: dict[str, Any] = {'x': o.x}" in text


def test_loader_source_prints_the_compiled_loader() -> None:
    """loader_source prints the loader compiled for a caller's class, as a traceback shows it."""
    converter = _converter()
    source = loader_source(converter, Point)
    assert source.startswith("def load(d, p, c):\n")
    assert "raise type_error('string', v, p + '/label')" in source
    assert source == "".join(linecache.getlines(f"<agentproto loader {__name__}.Point>"))
    assert dumper_source(converter, Point).startswith("def dump(o):\n")


def test_loader_source_reads_a_sealed_loader_from_its_module() -> None:
    """For a generated class, loader_source prints the sealed module's function."""
    converter = make_converter()
    source = loader_source(converter, schema.ToolCallUpdateSessionUpdate)
    assert source.startswith("def _load_ToolCallUpdateSessionUpdate(")
    assert source in Path(_generated_loaders_v2.__file__).read_text(encoding="utf-8")
    dumped = dumper_source(converter, schema.ToolCallUpdateSessionUpdate)
    assert dumped.startswith("def _dump_ToolCallUpdateSessionUpdate(")


def _item(field: str) -> type:
    """A class named ``Item`` holding one required string field ``field``."""
    made: type = attrs.make_class(
        "Item",
        {
            field: attrs.field(type="str", metadata={"wire": field, "required": True}),
            "extra": attrs.field(default=None, metadata={"extra": True}),
        },
        kw_only=True,
    )
    return made


def test_each_compiled_unit_keeps_its_own_lines() -> None:
    """Two classes of one name compile under two file names, each traceback showing its own line."""
    converter = _converter()
    first, second = converter.loader(_item("alpha")), converter.loader(_item("beta"))
    names = {first.__code__.co_filename, second.__code__.co_filename}
    assert len(names) == 2
    for loader, wire in ((first, "alpha"), (second, "beta")):
        with pytest.raises(SchemaError) as caught:
            loader({wire: 0}, "", python_context(None))
        assert f"raise type_error('string', v, p + '/{wire}')" in _traceback(caught.value)


def test_the_same_text_compiled_again_reuses_its_name() -> None:
    """Compiling the same text twice registers one file name, not a new one each time."""
    text = "def f():\n    return 1\n"
    first = compile_source(text, "test same text", {})
    assert compile_source(text, "test same text", {}) == first
    assert compile_source(text.replace("1", "2"), "test same text", {}) != first


def test_function_source_survives_a_cleared_linecache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Printing compiled code works even after something cleared linecache's entry."""
    env: dict[str, Any] = {}
    name = compile_source("def g(x):\n    return x + 1\n", "test cleared", env)
    monkeypatch.delitem(linecache.cache, name)
    assert function_source(env["g"]) == "def g(x):\n    return x + 1\n"
