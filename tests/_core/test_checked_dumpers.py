"""The checked dumpers of the AG-UI loaders module (codegen/checked.py), and their copy
in the native module (compiled in the mypyc build; plain Python, checking the generated
source, in the pure one).

A checked dumper writes an object's JSON and holds it to the schema on the way. It
may decline (``SlowPath`` or an error: the caller then dumps and checks the slow
way), but what it returns must be exactly the dumper's JSON, and JSON the strict
loader accepts. Held here on valid instances of every generated AG-UI class and on
instances with one value anywhere replaced by a wrong one; and, for AG-UI events,
``dump_event`` / the encoders give the same result or the same error as dumping and
checking did before.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentproto import AgentProtoError, SchemaError
from agentproto._core.wire.checks import Unrecognised
from agentproto._core.wire.converter import STRICT, python_context
from agentproto._core.wire.loaders import SlowPath
from agentproto.agui import _generated as _generated_agui
from agentproto.agui import _generated_loaders as _loaders_agui
from agentproto.agui import _generated_native as _native_agui
from agentproto.agui import encode_event_jsonl, parse_event, schema
from agentproto.agui import make_converter as make_agui_converter
from agentproto.agui._protocol import kinds as _kinds
from agentproto.agui._protocol import wire as _wire
from tests.benchmarks.run_generator import generate_run
from tests.strategies import instances
from tests.test_roundtrip_property import generated_classes

CONVERTER = make_agui_converter()
CLASSES = generated_classes(_generated_agui)
PROPERTY = settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
DECLINED = (SlowPath, Unrecognised, AgentProtoError)
TABLES = {
    "plain": _loaders_agui.CHECKED_DUMPERS,
    "native": _native_agui.CHECKED_DUMPERS,
}
"""The checked dumpers of both generated modules, by module."""
EVENT_CLASSES = list(_kinds.EVENT_CLASSES.values())


class _Str(str):
    __slots__ = ()


WRONG: list[Any] = [
    None, 0, -(2**60), 2**70, 1.5, math.nan, math.inf, True, "x", "", _Str("x"),
    [], [1], ["x"], [None], {}, {"a": 1}, {"a": object()}, ("t",), object(),
    schema.Tool(name="t", description="d", parameters={}),
    schema.TextMessageEndEvent(message_id="m"),
]  # fmt: skip
"""Values put in place of a field's value: wrong for most fields, right for some."""


def _nodes(value: Any) -> list[Any]:
    """The attrs instances within ``value`` (itself included), depth first."""
    found: list[Any] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if attrs.has(item.__class__):
            found.append(item)
            stack.extend(getattr(item, f.name) for f in attrs.fields(item.__class__))
        elif isinstance(item, list):
            stack.extend(item)
    return found


def _mutated(data: st.DataObject, obj: Any) -> Any:
    node = data.draw(st.sampled_from(_nodes(obj)))
    fields = [f for f in attrs.fields(node.__class__) if not f.metadata.get("extra")]
    if fields:
        field = data.draw(st.sampled_from(fields))
        setattr(node, field.name, data.draw(st.sampled_from(WRONG)))
    return obj


def _vouched(table: str, cls: type, obj: Any, ctx: Any) -> dict[str, Any] | None:
    """The checked dumper's JSON of ``obj``, held to what it promises; None if it declined."""
    try:
        wire = TABLES[table][cls](obj, ctx)
    except DECLINED:
        return None
    assert wire == CONVERTER.dump(obj)
    CONVERTER.loader(cls)(wire, "", ctx)  # the strict loader accepts it (raises if not)
    return wire  # type: ignore[no-any-return]


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("cls", CLASSES)
@PROPERTY
@given(data=st.data())
def test_what_a_checked_dumper_returns_is_the_dump_and_loads_strictly(
    table: str, cls: type, data: st.DataObject
) -> None:
    obj = data.draw(instances(cls, _generated_agui))
    for ctx in (STRICT, python_context(None)):
        # the quick way is the way taken: a valid object is never sent the slow way
        assert _vouched(table, cls, obj, ctx) is not None
    obj = _mutated(data, obj)
    for ctx in (STRICT, python_context(None)):
        _vouched(table, cls, obj, ctx)


@pytest.mark.parametrize("table", TABLES)
def test_every_event_of_a_long_run_is_dumped_the_quick_way(table: str) -> None:
    events = [parse_event(w) for w in generate_run(3_000, seed=7)]
    for event in events:
        assert _vouched(table, event.__class__, event, STRICT) is not None


def test_the_runtime_dumps_with_the_native_dumpers_when_compiled() -> None:
    """The compiled build's events go through the compiled checked dumpers; the pure
    build's through the plain ones (the native module is not imported there)."""
    table = "native" if _wire._NATIVE is not None else "plain"
    assert _wire.CHECKED._dumpers == {cls: TABLES[table][cls] for cls in EVENT_CLASSES}


def _old_way(event: Any, ctx: Any) -> Any:
    """What dump_event(check=True) did before checked dumpers: dump, then load strictly."""
    wire = _wire.CONVERTER.dump(event)
    _wire.check_wire(wire, ctx)
    return wire


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return ("ok", fn(*args))
    except SchemaError as exc:
        problems = [(str(p), p.keyword, p.location) for p in exc.problems]
        return ("error", str(exc), exc.keyword, exc.location, problems)
    except AgentProtoError as exc:
        return ("error", type(exc).__name__, str(exc))


@pytest.mark.parametrize("cls", EVENT_CLASSES)
@PROPERTY
@given(data=st.data())
def test_a_checked_event_dump_decides_as_dumping_and_checking_did(
    cls: type, data: st.DataObject
) -> None:
    event = _mutated(data, data.draw(instances(cls, _generated_agui)))
    for ctx in (STRICT, python_context(None)):
        assert _outcome(_wire.CHECKED.dump, event, ctx) == _outcome(_old_way, event, ctx)


def test_an_object_that_is_no_event_is_refused_as_before() -> None:
    tool = schema.Tool(name="t", description="d", parameters={})
    with pytest.raises(SchemaError) as caught:
        encode_event_jsonl(tool)  # type: ignore[arg-type]
    assert _outcome(_wire.CHECKED.dump, tool, STRICT) == _outcome(_old_way, tool, STRICT)
    assert caught.value.keyword == "oneOf"


@pytest.mark.parametrize("table", TABLES)
def test_a_subclassed_value_takes_the_slow_way_and_passes(table: str) -> None:
    event = schema.TextMessageContentEvent(message_id="m", delta=_Str("hi"))
    try:
        TABLES[table][schema.TextMessageContentEvent](event, STRICT)
    except DECLINED:
        pass
    else:
        pytest.fail("a str subclass was vouched for without the slow way")
    assert _outcome(_wire.CHECKED.dump, event, STRICT) == _outcome(_old_way, event, STRICT)
