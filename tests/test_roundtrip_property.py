"""Property: every generated class survives dump → load unchanged, and its JSON survives orjson."""

from __future__ import annotations

import types
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentproto._core.wire.converter import WireConverter
from agentproto.acp import _generated_v1, _generated_v2, make_converter, make_v1_converter
from agentproto.agui import _generated as _generated_agui
from agentproto.agui import make_converter as make_agui_converter
from tests.jsonsame import same_json
from tests.strategies import instances

CONVERTERS: dict[types.ModuleType, WireConverter] = {
    _generated_agui: make_agui_converter(),
    _generated_v2: make_converter(),
    _generated_v1: make_v1_converter(),
}

PROPERTY = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def generated_classes(module: types.ModuleType) -> list[type]:
    """The attrs classes defined in a generated module, in definition order."""
    return [
        value
        for name, value in vars(module).items()
        if isinstance(value, type)
        and attrs.has(value)
        and value.__module__ == module.__name__
        and name == value.__name__  # not an alias such as InitializeProxyRequest
    ]


# A JSON-RPC response's `result` is typed by the request it answers, which the
# response names only by id: from the document alone, result classes whose JSON
# coincides (e.g. several empty `{}` results) cannot be told apart. These classes
# are held to the JSON round trip: the loaded object dumps back to the same JSON.
RESULT_RESPONSES = frozenset(
    {
        "ResultAgentResponse",
        "ResultClientResponse",
        "ResultProxyResponse",
        "ResultMessageMcpResponse",
    }
)


def check_roundtrip(module: types.ModuleType, tp: Any, value: Any) -> None:
    """``load(dump(value), tp) == value`` and the dump is orjson-stable."""
    converter = CONVERTERS[module]
    dumped = converter.dump(value)
    assert same_json(orjson.loads(orjson.dumps(dumped)), dumped)
    loaded = converter.load(dumped, tp)
    if getattr(tp, "__name__", "") in RESULT_RESPONSES:
        assert same_json(converter.dump(loaded), dumped)
    else:
        assert loaded == value


def _params(module: types.ModuleType) -> list[Any]:
    return [pytest.param(cls, id=cls.__name__) for cls in generated_classes(module)]


@pytest.mark.parametrize("cls", _params(_generated_agui))
@PROPERTY
@given(data=st.data())
def test_agui_class_roundtrip(cls: type, data: st.DataObject) -> None:
    """Every AG-UI class dumps to orjson-stable JSON that loads back to an equal object."""
    check_roundtrip(_generated_agui, cls, data.draw(instances(cls, _generated_agui)))


@pytest.mark.parametrize("cls", _params(_generated_v2))
@PROPERTY
@given(data=st.data())
def test_acp_v2_class_roundtrip(cls: type, data: st.DataObject) -> None:
    """Every ACP v2 class dumps to orjson-stable JSON that loads back to an equal object."""
    check_roundtrip(_generated_v2, cls, data.draw(instances(cls, _generated_v2)))


@pytest.mark.parametrize("cls", _params(_generated_v1))
@PROPERTY
@given(data=st.data())
def test_acp_v1_class_roundtrip(cls: type, data: st.DataObject) -> None:
    """Every ACP v1 class dumps to orjson-stable JSON that loads back to an equal object."""
    check_roundtrip(_generated_v1, cls, data.draw(instances(cls, _generated_v1)))


UNIONS = [
    pytest.param(_generated_agui, _generated_agui.Event, id="Event"),
    pytest.param(_generated_agui, _generated_agui.Message, id="Message"),
    pytest.param(_generated_v2, _generated_v2.SessionUpdate, id="SessionUpdate"),
]


@pytest.mark.parametrize(("module", "union"), UNIONS)
@PROPERTY
@given(data=st.data())
def test_union_roundtrip(module: types.ModuleType, union: Any, data: st.DataObject) -> None:
    """A member of a tagged union loads back through the union as an equal object of its class."""
    value = data.draw(instances(union, module))
    check_roundtrip(module, union, value)
    assert type(CONVERTERS[module].load(CONVERTERS[module].dump(value), union)) is type(value)


def test_every_module_has_classes() -> None:
    """The enumeration sees the generated classes of all three modules (no silent empty run)."""
    counts = {m.__name__: len(generated_classes(m)) for m in CONVERTERS}
    assert all(count > 50 for count in counts.values()), counts
