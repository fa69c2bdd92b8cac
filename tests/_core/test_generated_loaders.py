"""The sealed loaders modules: the converters use them, and they behave as compiled ones do.

The code generator writes each protocol's loaders and dumpers into a sealed module
(``_generated_loaders*.py``) with the converter's own code builders. These tests hold
the runtime to using them (no loader is compiled at run time for a generated class)
and hold them to the behaviour of the loaders the converter compiles: the same
objects, the same errors (keyword, location, every problem) and the same diagnostics,
strict and tolerant, on valid documents and on damaged ones.
"""

from __future__ import annotations

import ast
import json
import types
from collections import Counter
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentproto import SchemaError
from agentproto._core.diagnostics import Diagnostic
from agentproto._core.wire.converter import Unrecognised, WireConverter
from agentproto._core.wire.loaders import check_stamp
from agentproto.acp import (
    _generated_loaders_v1,
    _generated_loaders_v2,
    _generated_v1,
    _generated_v2,
)
from agentproto.acp._protocol import wire as acp_wire
from agentproto.agui import _generated, _generated_loaders, schema
from agentproto.agui._protocol import wire as agui_wire
from tests.needs import spec_dir
from tests.strategies import instances

MODULES = [
    (_generated, _generated_loaders),
    (_generated_v2, _generated_loaders_v2),
    (_generated_v1, _generated_loaders_v1),
]
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _classes(module: types.ModuleType) -> list[type]:
    return [
        v
        for n, v in vars(module).items()
        if isinstance(v, type)
        and attrs.has(v)
        and v.__module__ == module.__name__
        and n == v.__name__
    ]


def _outcome(converter: WireConverter, value: Any, tp: Any, tolerant: bool) -> Any:
    """What loading gives: the dumped object and diagnostics, or the error in full."""
    found: list[Diagnostic] | None = [] if tolerant else None
    try:
        loaded = converter.load(value, tp, diagnostics=found)
    except SchemaError as exc:
        return ("error", exc.keyword, exc.location, str(exc), [str(p) for p in exc.problems])
    except Unrecognised as exc:  # tolerant: the caller drops the whole document
        return ("unrecognised", exc.path, exc.detail, found)
    return ("ok", converter.dump(loaded), found)


def _same_everywhere(classes_module: types.ModuleType, generated: types.ModuleType) -> Any:
    compiled = WireConverter(classes_module)
    sealed = WireConverter(classes_module, generated)

    def check(value: Any, tp: Any) -> None:
        for tolerant in (False, True):
            assert _outcome(sealed, value, tp, tolerant) == _outcome(
                compiled, value, tp, tolerant
            ), (tp, value, tolerant)

    return check


def _damaged(document: Any) -> list[Any]:
    """``document`` with each top-level member dropped, retyped or nulled, and with an
    unknown member added."""
    if not isinstance(document, dict):
        return [document, {"x": document}]
    out: list[Any] = [{**document, "notInTheSchema": 1}, [document]]
    for key in document:
        rest = {k: v for k, v in document.items() if k != key}
        out.append(rest)
        for wrong in (None, 12345, "text", 1.5, True, [], {}, [1], {"a": 1}):
            out.append({**rest, key: wrong})
    return out


def test_runtime_converters_compile_nothing_for_generated_classes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Parsing and dumping every AG-UI fixture and an ACP update uses only sealed loaders."""

    def refuse(self: WireConverter, cls: type) -> Any:
        raise AssertionError(f"compiled at run time: {cls.__qualname__}")

    monkeypatch.setattr(WireConverter, "_compile_class_loader", refuse)
    monkeypatch.setattr(WireConverter, "_compile_dumper", refuse)
    count = 0
    for path in sorted(spec_dir("agui/draft/fixtures").glob("*/valid/*.json")):
        tp = getattr(schema, path.parts[-3])
        document = json.loads(path.read_text(encoding="utf-8"))
        agui_wire.CONVERTER.dump(agui_wire.CONVERTER.load(document, tp))
        count += 1
    assert count > 20
    update = {
        "sessionUpdate": "agent_message_chunk",
        "messageId": "m1",
        "content": {"type": "text", "text": "hi"},
    }
    acp_wire.dump_session_update(acp_wire.parse_session_update(update))


def test_sealed_loaders_match_compiled_ones_on_agui_fixtures() -> None:
    """Every AG-UI fixture, valid, invalid and damaged, loads the same either way."""
    check = _same_everywhere(_generated, _generated_loaders)
    fixtures = spec_dir("agui/draft/fixtures")
    paths = [p for p in sorted(fixtures.glob("*/*/*.json")) if not p.name.endswith(".expect.json")]
    assert len(paths) > 40
    for path in paths:
        tp = getattr(schema, path.parts[-3])
        document = json.loads(path.read_text(encoding="utf-8"))
        for value in [document, *_damaged(document)]:
            check(value, tp)
            check(value, schema.Event)


@pytest.mark.parametrize(("classes_module", "generated"), MODULES, ids=lambda m: m.__name__)
def test_sealed_loaders_match_compiled_ones_on_any_class(
    classes_module: types.ModuleType, generated: types.ModuleType
) -> None:
    """For any generated class, its documents and their damaged copies load the same either way."""
    check = _same_everywhere(classes_module, generated)
    reference = WireConverter(classes_module)
    classes = _classes(classes_module)

    @PROPERTY
    @given(
        st.sampled_from(classes).flatmap(
            lambda c: st.tuples(st.just(c), instances(c, classes_module))
        )
    )
    def run(case: tuple[type, Any]) -> None:
        cls, instance = case
        document = reference.dump(instance)
        for value in [document, *_damaged(document)]:
            check(value, cls)

    run()


def test_every_class_and_alias_has_a_sealed_loader() -> None:
    """The tables list every class and union alias of their classes module."""
    for classes_module, generated in MODULES:
        classes = _classes(classes_module)
        assert set(classes) <= set(generated.LOADERS)
        assert set(classes) <= set(generated.DUMPERS)
    assert schema.Event in _generated_loaders.LOADERS
    assert _generated_v2.SessionUpdate in _generated_loaders_v2.LOADERS


def test_loaders_from_another_schema_are_refused() -> None:
    """A loaders module beside classes generated from another schema refuses to load."""
    classes = types.ModuleType("some_classes")
    classes._SCHEMA_SHA256 = "0" * 64  # type: ignore[attr-defined]
    with pytest.raises(ImportError, match=r"another schema.*python -m codegen"):
        check_stamp(classes, "1" * 64, "some_loaders")
    check_stamp(classes, "0" * 64, "some_loaders")  # the same schema: accepted


@pytest.mark.parametrize("generated", [m for _, m in MODULES], ids=lambda m: m.__name__)
def test_each_name_of_a_loaders_module_is_defined_once(generated: types.ModuleType) -> None:
    """No function or table is written twice (a class alias names its class once more)."""
    assert generated.__file__ is not None
    tree = ast.parse(Path(generated.__file__).read_text(encoding="utf-8"))
    names = [n.name for n in tree.body if isinstance(n, ast.FunctionDef)]
    names += [
        n.target.id
        for n in tree.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    assert len(names) > 100
    assert sorted(n for n, count in Counter(names).items() if count > 1) == []


_CONTENT_ITEMS = [
    {"type": "content", "content": {"type": "text", "text": "ok"}},
    {"type": "content", "content": {"type": "text", "text": 5}},  # known tags, bad inside
    {"type": "content", "content": {"type": "sound", "data": "x"}},  # unknown inner tag
    {"type": "content", "content": ["text"]},  # the inner value not an object
    {"type": "diff", "path": "/a", "newText": "b", "bogus": 1},  # closed: unknown member
    {"type": "terminal"},  # a required member missing
    {"type": "made-up", "x": 1},  # unknown tag: the catch-all member
    {"type": ["content"]},  # a tag that is no string
    {"content": {"type": "text", "text": "ok"}},  # no tag
    "content",  # not an object
]


def _loaded(load: Any, value: Any, path: str, diagnostics: list[Diagnostic] | None) -> Any:
    from agentproto._core.wire.checks import Context

    try:
        got = load(value, path, Context(diagnostics))
    except (SchemaError, Unrecognised) as exc:
        return type(exc).__name__, str(exc), getattr(exc, "keyword", None)
    return got, diagnostics


@pytest.mark.parametrize("tolerant", [False, True])
@pytest.mark.parametrize("item", _CONTENT_ITEMS, ids=range(len(_CONTENT_ITEMS)))
def test_a_field_dispatching_its_union_acts_as_the_union_loader(item: Any, tolerant: bool) -> None:
    """A tagged-union field (and each item of a list of one) calls the class of its tag
    itself: the object, error and diagnostics are those of the list and union loaders."""
    gen = _generated_loaders_v2
    content = [{"type": "content", "content": {"type": "text", "text": "a"}}, item]
    update = {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "content": content}
    ours = _loaded(gen._load_ToolCallUpdateSessionUpdate, update, "", [] if tolerant else None)
    theirs = _loaded(
        gen._ToolCallUpdateSessionUpdate_F6, content, "/content", [] if tolerant else None
    )
    if isinstance(ours[0], str) or isinstance(theirs[0], str):
        assert ours == theirs
    else:
        assert ours[0].content == theirs[0]
        assert ours[1] == theirs[1]
