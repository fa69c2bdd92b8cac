"""The native loaders (``agui._generated_native``, compiled in the mypyc build) decide
exactly as the plain ones (``agui._generated_loaders``) on every input.

``nox -s tests`` runs this on the pure build, where the native module is plain Python:
it checks the generated source. ``nox -s tests_compiled`` runs it on the compiled build,
where it checks what mypyc made of it; there the runtime converter decodes through the
native loaders too.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from agentproto._core.errors import SchemaError
from agentproto._core.wire.checks import Unrecognised
from agentproto._core.wire.converter import STRICT, Context, python_context
from agentproto._core.wire.loaders import compiled_module
from agentproto.agui import _generated, _generated_loaders, _generated_native
from agentproto.agui._generated import Event
from agentproto.agui._protocol.wire import CONVERTER
from tests.benchmarks.builds import build_of
from tests.benchmarks.run_generator import generate_run

_ODD_VALUES = (None, True, 1, 2**70, 1.5, "x", "", [], [1], {}, {"a": 1})


def _outcome(load: Any, doc: Any, ctx_of: Any) -> tuple[str, Any, list[Any]]:
    """What a loader does with ``doc``: its result or its error, and its diagnostics."""
    found: list[Any] = []
    ctx = ctx_of(found)
    try:
        return ("ok", load(copy.deepcopy(doc), "", ctx), found)
    except (SchemaError, Unrecognised) as exc:
        return (type(exc).__name__, (str(exc), getattr(exc, "path", None)), found)


def _variants(event: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``event``, and it broken each way a peer could break it."""
    yield event
    yield {**event, "unknownMember": 1}
    for key in event:
        yield {k: v for k, v in event.items() if k != key}  # a member missing
        for odd in _ODD_VALUES:  # a member of each other JSON type
            yield {**event, key: odd}


_EVENTS = [e for e in generate_run(600, 7) if isinstance(e, dict)]
_KINDS = sorted({e["type"] for e in _EVENTS})
_CONTEXTS = {
    "strict": lambda found: STRICT,
    "tolerant": lambda found: Context(found),
    "python": lambda found: python_context(found),
}


@pytest.mark.parametrize("kind", _KINDS)
@pytest.mark.parametrize("context", sorted(_CONTEXTS))
def test_native_loaders_decide_as_the_plain_ones(kind: str, context: str) -> None:
    """Valid events and every broken variant: the same object, or the same error."""
    plain = _generated_loaders.LOADERS[Event]
    native = _generated_native.LOADERS[Event]
    ctx_of = _CONTEXTS[context]
    compared = 0
    for event in (e for e in _EVENTS if e["type"] == kind):
        for doc in _variants(event):
            assert _outcome(native, doc, ctx_of) == _outcome(plain, doc, ctx_of), doc
            compared += 1
    assert compared > 0


def test_every_class_has_a_native_loader() -> None:
    """The two tables name the same types (a class missing would be loaded the slow way)."""
    assert set(_generated_native.LOADERS) == set(_generated_loaders.LOADERS)
    assert _generated_native.LOADERS.keys() >= {
        v
        for v in vars(_generated).values()
        if isinstance(v, type) and hasattr(v, "__attrs_attrs__")
    }


def test_the_runtime_loads_through_the_native_loaders_only_when_compiled() -> None:
    """The pure build keeps the plain loaders (faster interpreted); the compiled build
    takes the native ones."""
    native = compiled_module("agentproto.agui._generated_native")
    assert (native is not None) == (build_of() == "compiled")
    table = _generated_native.LOADERS if native is not None else _generated_loaders.LOADERS
    assert (
        CONVERTER._loaders[_generated.TextMessageContentEvent]
        is table[_generated.TextMessageContentEvent]
    )
