"""Method tables come from the generated METHODS tables, and agree with the schema."""

from __future__ import annotations

import json
import types
from typing import Any

import pytest

from agentproto._core.diagnostics import Diagnostic
from agentproto._core.errors import MethodTableError, SchemaError, UsageError
from agentproto.acp import _generated_v1, _generated_v2
from agentproto.acp._generated_v2 import (
    AcceptCreateElicitationResponse,
    BooleanSetSessionConfigOptionRequest,
    ElicitationSchema,
    FormCreateElicitationRequest,
    IdSetSessionConfigOptionRequest,
    OtherSetSessionConfigOptionRequest,
    PromptRequest,
    SetSessionConfigOptionResponse,
    TextContentBlock,
)
from agentproto.acp._io.transports import connect_pair
from agentproto.acp._protocol.errors import RpcErrorCode
from agentproto.acp._protocol.jsonrpc import Request
from agentproto.acp._protocol.methods import (
    MethodSpec,
    build_method_table,
    classes_of,
    method_table,
)
from agentproto.acp._rpc.endpoint import Endpoint
from tests.needs import spec_dir

MODULES = {1: _generated_v1, 2: _generated_v2}
ROLE_BY_SUFFIX = {"Request": "params", "Response": "result", "Notification": "params"}


def _schema_defs(protocol: int, name: str) -> dict[str, Any]:
    path = spec_dir(f"acp/v{protocol}/{name}")
    defs: dict[str, Any] = json.loads(path.read_text())["$defs"]
    return defs


def _schema_methods(protocol: int, name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, kind) → {side, params, result} of a schema file, read by the schema's own
    naming convention (``…Request`` / ``…Response`` / ``…Notification``): an oracle
    independent of the generator, which reads the JSON-RPC envelopes instead."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for def_name, definition in _schema_defs(protocol, name).items():
        if "x-method" not in definition:
            continue
        suffix = next(s for s in ROLE_BY_SUFFIX if def_name.endswith(s))
        kind = "notification" if suffix == "Notification" else "request"
        entry = found.setdefault((definition["x-method"], kind), {"params": None, "result": None})
        entry["side"] = definition["x-side"]
        entry[ROLE_BY_SUFFIX[suffix]] = def_name
    return found


def _stamped(module: types.ModuleType) -> list[type]:
    return [
        value
        for name, value in vars(module).items()
        if isinstance(value, type)
        and value.__name__ == name
        and "__agentproto_method__" in value.__dict__
    ]


@pytest.mark.parametrize("protocol", [1, 2])
def test_every_schema_method_is_in_the_table(protocol: int) -> None:
    """Every x-method of the pinned schema is in the table with its side, kind and types
    (union aliases included), and the table has nothing else."""
    table = method_table(protocol)
    module = MODULES[protocol]
    expected = _schema_methods(protocol, "schema.unstable.json")
    got = {(s.method, s.kind): s for s in [*table.requests.values(), *table.notifications.values()]}
    assert set(got) == set(expected)
    for key, want in expected.items():
        spec = got[key]
        assert spec.side == want["side"], key
        for role in ("params", "result"):
            name = want[role]
            assert getattr(spec, role) is (None if name is None else getattr(module, name)), key


@pytest.mark.parametrize("protocol", [1, 2])
def test_stable_marks_agree_with_the_stable_schema(protocol: int) -> None:
    """A method is stable exactly when the pinned stable schema has the same method and kind."""
    stable = set(_schema_methods(protocol, "schema.json"))
    table = method_table(protocol)
    specs = [*table.requests.values(), *table.notifications.values()]
    assert {(s.method, s.kind) for s in specs if s.stable} == stable
    assert all(isinstance(s.stable, bool) for s in specs)
    assert any(s.stable is False for s in specs)  # the unstable schema adds methods


def test_the_table_is_read_from_the_generated_methods() -> None:
    """The table is what the module's METHODS says, entry for entry."""
    for protocol, module in MODULES.items():
        table = method_table(protocol)
        for (method, kind), entry in module.METHODS.items():
            spec = (table.requests if kind == "request" else table.notifications)[method]
            assert (spec.side, spec.stable) == (entry["side"], entry["stable"])


@pytest.mark.parametrize("protocol", [1, 2])
def test_every_stamped_class_is_in_the_table(protocol: int) -> None:
    """Every class carrying a method stamp is the params or result of a table entry."""
    table = method_table(protocol)
    for cls in _stamped(MODULES[protocol]):
        method = cls.__dict__["__agentproto_method__"]
        if cls.__name__.endswith("Notification"):
            spec = table.notifications[method]
            assert spec.params is cls
        else:
            spec = table.requests[method]
            assert cls in (spec.params, spec.result)
        assert spec.side == cls.__dict__["__agentproto_side__"]


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
        stable=True,
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


def test_union_params_belong_to_their_method() -> None:
    """A union alias and each of its members lead to the alias's method."""
    table = method_table(2)
    spec = table.requests["session/set_config_option"]
    assert spec.params is _generated_v2.SetSessionConfigOptionRequest
    assert spec.result is SetSessionConfigOptionResponse
    for tp in (
        _generated_v2.SetSessionConfigOptionRequest,
        IdSetSessionConfigOptionRequest,
        BooleanSetSessionConfigOptionRequest,
        OtherSetSessionConfigOptionRequest,
    ):
        assert table.for_params(tp) is spec
    elicitation = table.requests["elicitation/create"]
    assert (elicitation.side, elicitation.stable) == ("client", True)
    assert table.for_params(FormCreateElicitationRequest) is elicitation
    assert table.for_result(AcceptCreateElicitationResponse) is elicitation


def test_an_alias_of_another_methods_class_leaves_it_to_that_method() -> None:
    """``InitializeProxyRequest`` is ``InitializeRequest``: the class leads to ``initialize``."""
    table = method_table(2)
    proxy = table.requests["proxy/initialize"]
    assert proxy.params is _generated_v2.InitializeRequest
    assert (proxy.side, proxy.stable) == ("proxy", False)
    assert table.for_params(_generated_v2.InitializeRequest) is table.requests["initialize"]


def test_classes_of() -> None:
    """A class is its own class set, a union of classes its members, anything else None."""
    assert classes_of(PromptRequest) == (PromptRequest,)
    assert BooleanSetSessionConfigOptionRequest in (
        classes_of(_generated_v2.SetSessionConfigOptionRequest) or ()
    )
    assert classes_of(Any) is None
    assert classes_of(dict[str, Any]) is None


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


def test_error_codes_are_the_schemas() -> None:
    """Every code the v2 schema's ErrorCode titles is a member, named by its title."""
    members = _schema_defs(2, "schema.unstable.json")["ErrorCode"]["anyOf"]
    titled = {m["const"]: m["title"] for m in members if "const" in m}
    assert {int(code) for code in RpcErrorCode} == set(titled)
    for code, title in titled.items():
        assert RpcErrorCode(code).name == title.upper().replace(" ", "_")


# ---- a broken table fails loudly ----------------------------------------------------------


def _fake(methods: Any = None, **names: Any) -> types.ModuleType:
    module = types.ModuleType("fake")
    if methods is not None:
        module.METHODS = methods  # type: ignore[attr-defined]
    for name, value in names.items():
        setattr(module, name, value)
    return module


class FooRequest:
    pass


def test_a_module_without_methods_fails_loudly() -> None:
    """A module generated before METHODS existed is refused, saying to regenerate."""
    with pytest.raises(MethodTableError, match="regenerate"):
        build_method_table(_fake(), 2)


def test_an_entry_naming_a_missing_type_fails_loudly() -> None:
    """An entry whose params or result name is not in the module fails the table."""
    entry = {"side": "agent", "params": "FooRequest", "result": "FooResponse", "stable": True}
    with pytest.raises(MethodTableError, match="FooResponse"):
        build_method_table(_fake({("foo", "request"): entry}, FooRequest=FooRequest), 2)


@pytest.mark.parametrize(
    "key, entry",
    [
        (("foo", "call"), {"side": "agent", "params": None, "result": None}),
        (("foo", "request"), {"params": None, "result": None}),
        ("foo", {"side": "agent"}),
    ],
)
def test_a_malformed_entry_fails_loudly(key: Any, entry: Any) -> None:
    """An unknown kind, a missing side or a key that is no (method, kind) fails the table."""
    with pytest.raises(MethodTableError):
        build_method_table(_fake({key: entry}), 2)


def test_a_class_named_for_two_methods_fails_loudly() -> None:
    """One class cannot be named the params of two methods."""
    entry = {"side": "agent", "params": "FooRequest", "result": None, "stable": True}
    methods = {("foo", "request"): entry, ("bar", "request"): entry}
    with pytest.raises(MethodTableError, match="FooRequest"):
        build_method_table(_fake(methods, FooRequest=FooRequest), 2)


# ---- union params over a connection -------------------------------------------------------


async def test_union_params_round_trip_over_a_connection() -> None:
    """A typed member of a union params alias goes out under its method, arrives typed as
    that member, and the typed result comes back; the other direction likewise."""
    agent, client = connect_pair()
    seen: list[Any] = []

    async def set_option(params: Any) -> SetSessionConfigOptionResponse:
        seen.append(params)
        return SetSessionConfigOptionResponse(config_options=[])

    async def elicit(params: Any) -> AcceptCreateElicitationResponse:
        seen.append(params)
        return AcceptCreateElicitationResponse(content={"name": "x"})

    agent.handle("session/set_config_option", set_option)
    client.handle("elicitation/create", elicit)
    form = FormCreateElicitationRequest(
        message="name?", requested_schema=ElicitationSchema(type="object", properties={})
    )
    async with agent, client:
        boolean = BooleanSetSessionConfigOptionRequest(session_id="s", config_id="c", value=True)
        assert await client.request(boolean) == SetSessionConfigOptionResponse(config_options=[])
        raw = {"sessionId": "s", "configId": "c", "type": "slider", "value": 3}
        await client.request("session/set_config_option", raw)
        answer = await agent.request(form)
    assert seen[0] == boolean
    assert isinstance(seen[1], OtherSetSessionConfigOptionRequest) and seen[1].value == 3
    assert seen[2] == form
    assert answer == AcceptCreateElicitationResponse(content={"name": "x"})


async def test_union_params_refuse_a_foreign_object() -> None:
    """A typed object outside the union, or a dict matching no member, is refused before
    anything is sent."""
    agent, client = connect_pair()
    prompt = PromptRequest(session_id="s", prompt=[TextContentBlock(text="hi")])
    async with agent, client:
        with pytest.raises(UsageError, match="BooleanSetSessionConfigOptionRequest"):
            await client.request("session/set_config_option", prompt)
        with pytest.raises(SchemaError):
            await client.request("session/set_config_option", {"sessionId": "s"})


def test_union_params_the_schema_rejects_get_invalid_params() -> None:
    """Params of a union type that match no member are answered ``invalid params``."""
    agent = Endpoint("agent")
    params = {"sessionId": "s", "configId": "c", "value": True}  # no `type`
    (event,) = agent.receive(Request(7, "session/set_config_option", params))
    assert isinstance(event, Diagnostic) and event.code == "rpc.invalid-params"
    reply = json.loads(agent.data_to_send())
    assert reply["id"] == 7
    assert reply["error"]["code"] == RpcErrorCode.INVALID_PARAMS
    assert reply["error"]["data"]["location"] == "/params"
