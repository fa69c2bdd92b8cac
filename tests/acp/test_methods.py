"""Method tables come from the generated classes' stamps, and agree with the schema."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from agentproto.acp import _generated_v1, _generated_v2
from agentproto.acp._methods import (
    MethodSpec,
    MethodTableError,
    build_method_table,
    method_table,
)
from tests.conftest import mirror_dir

MODULES = {1: _generated_v1, 2: _generated_v2}


def _stamped(module: types.ModuleType) -> list[type]:
    return [
        value
        for name, value in vars(module).items()
        if isinstance(value, type)
        and value.__name__ == name
        and "__agentproto_method__" in value.__dict__
    ]


def _schema_defs(protocol: int, name: str) -> dict[str, Any]:
    path = mirror_dir() / "acp" / f"v{protocol}" / name
    defs: dict[str, Any] = json.loads(path.read_text())["$defs"]
    return defs


@pytest.mark.parametrize("protocol", [1, 2])
def test_every_stamped_class_is_in_the_table(protocol: int) -> None:
    """Every class carrying a method stamp is the params or result of a table entry."""
    table = method_table(protocol)
    for cls in _stamped(MODULES[protocol]):
        method = cls.__dict__["__agentproto_method__"]
        side = cls.__dict__["__agentproto_side__"]
        if cls.__name__.endswith("Notification"):
            spec = table.notifications[method]
            assert spec.params is cls
        else:
            spec = table.requests[method]
            assert cls in (spec.params, spec.result)
        assert spec.side == side


@pytest.mark.parametrize("protocol", [1, 2])
def test_table_matches_the_schema_methods(protocol: int) -> None:
    """Each schema definition with x-method is in the table, but for union aliases the
    generator cannot stamp (both halves unstamped), which are the known gap."""
    table = method_table(protocol)
    module = MODULES[protocol]
    missing = []
    for name, definition in _schema_defs(protocol, "schema.unstable.json").items():
        method = definition.get("x-method")
        if method is None:
            continue
        if name.endswith("Notification"):
            spec = table.notifications.get(method)
        else:
            spec = table.requests.get(method)
        if spec is None:
            missing.append(name)
            generated = getattr(module, name)
            assert getattr(generated, "__name__", None) != name, name  # an alias, not a class
            continue
        assert spec.side == definition["x-side"], name
        tp = spec.result if name.endswith("Response") else spec.params
        assert tp is getattr(module, name), name
    # the generator stamps classes only: these methods have a union alias on both sides
    assert set(missing) <= {
        "CreateElicitationRequest",
        "CreateElicitationResponse",
        "InitializeProxyRequest",
        "InitializeProxyResponse",
    }


@pytest.mark.parametrize("protocol", [1, 2])
def test_stability_is_unknown_until_the_generator_marks_it(protocol: int) -> None:
    """Without an ``__agentproto_stable__`` stamp stability is None; with one, it
    matches the stable schema's method set."""
    table = method_table(protocol)
    stable = {
        d["x-method"] for d in _schema_defs(protocol, "schema.json").values() if "x-method" in d
    }
    for spec in [*table.requests.values(), *table.notifications.values()]:
        if spec.stable is not None:
            assert spec.stable == (spec.method in stable), spec.method


def test_requests_pair_params_and_result() -> None:
    """A v2 request entry holds its params and result classes and the side that handles it."""
    table = method_table(2)
    prompt = table.requests["session/prompt"]
    assert prompt == MethodSpec(
        method="session/prompt",
        kind="request",
        side="agent",
        params=_generated_v2.PromptRequest,
        result=_generated_v2.PromptResponse,
    )
    assert table.for_params(_generated_v2.PromptRequest) is prompt
    assert table.for_result(_generated_v2.PromptResponse) is prompt
    assert table.requests["session/request_permission"].side == "client"
    assert table.notifications["session/update"].side == "client"
    assert table.notifications["$/cancel_request"].side == "protocol"


def test_a_name_can_be_both_a_request_and_a_notification() -> None:
    """``mcp/message`` is a request and a notification, each with its own entry."""
    table = method_table(2)
    assert table.requests["mcp/message"].kind == "request"
    assert table.notifications["mcp/message"].kind == "notification"


def test_unstamped_half_is_found_by_name() -> None:
    """A request whose params are a union alias gets the alias by the counterpart name."""
    spec = method_table(2).requests["session/set_config_option"]
    assert spec.params is _generated_v2.SetSessionConfigOptionRequest
    assert spec.result is _generated_v2.SetSessionConfigOptionResponse


def test_handled_by_splits_the_sides() -> None:
    """The agent handles prompts; the client handles session updates."""
    table = method_table(2)
    agent = {spec.method for spec in table.handled_by("agent")}
    client = {spec.method for spec in table.handled_by("client")}
    assert "session/prompt" in agent and "session/update" in client
    assert not agent & client - {"mcp/message"}


def test_v1_has_its_own_methods() -> None:
    """The v1 table is built from the v1 module (fs/* exist there only)."""
    assert "fs/read_text_file" in method_table(1).requests
    assert "fs/read_text_file" not in method_table(2).requests


def test_a_badly_named_stamped_class_fails_loudly() -> None:
    """A stamped class whose name the rules do not know fails the table."""

    class Strange:
        __agentproto_method__ = "x/y"
        __agentproto_side__ = "agent"

    module = types.ModuleType("fake")
    module.Strange = Strange  # type: ignore[attr-defined]
    with pytest.raises(MethodTableError, match="Strange"):
        build_method_table(module, 2)


def test_sides_must_agree() -> None:
    """A request and a response stamped with different sides fail the table."""

    class FooRequest:
        __agentproto_method__ = "foo"
        __agentproto_side__ = "agent"

    class FooResponse:
        __agentproto_method__ = "foo"
        __agentproto_side__ = "client"

    module = types.ModuleType("fake")
    module.FooRequest = FooRequest  # type: ignore[attr-defined]
    module.FooResponse = FooResponse  # type: ignore[attr-defined]
    with pytest.raises(MethodTableError, match="foo"):
        build_method_table(module, 2)
