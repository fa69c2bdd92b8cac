"""Every method of the generated v2 method table has a typed handler or call on the side the
schema puts it: stable methods on the plain API, unstable ones behind the opt-in."""

from __future__ import annotations

import inspect
import json

import pytest

from agentproto.acp import AcpClient, Agent, ClientHandlers, UnstableCalls
from agentproto.acp._protocol.api import AGENT_METHODS, CLIENT_METHODS, is_unstable
from agentproto.acp._protocol.methods import MethodSpec, method_table
from tests.needs import spec_dir

# who answers which side's methods in the typed API, besides the tables
HANDLED_BY_CONNECTION = {"$/cancel_request"}  # either side: the connection cancels the handler
OUT_OF_SCOPE_SIDES = {"proxy"}  # proxies are neither agent nor client


def _specs() -> list[MethodSpec]:
    table = method_table(2)
    return [*table.requests.values(), *table.notifications.values()]


def _stable_methods() -> set[str]:
    defs = json.loads(spec_dir("acp/v2/schema.json").read_text(encoding="utf-8"))["$defs"]
    return {d["x-method"] for d in defs.values() if isinstance(d, dict) and "x-method" in d}


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: f"{s.kind}:{s.method}")
def test_every_method_has_a_typed_place(spec: MethodSpec) -> None:
    """An agent method is an Agent handler and an AcpClient call (on ``unstable`` when
    unstable); a client method is a ClientHandlers callback; the protocol's own is the
    connection's."""
    if spec.method in HANDLED_BY_CONNECTION or spec.side in OUT_OF_SCOPE_SIDES:
        return
    if spec.side == "agent":
        entry = AGENT_METHODS[spec.method]
        handler = getattr(Agent, entry.name)
        assert inspect.iscoroutinefunction(handler), spec.method
        caller = UnstableCalls if is_unstable(spec) else AcpClient
        assert inspect.iscoroutinefunction(getattr(caller, entry.name)), spec.method
    else:
        assert spec.side == "client", spec
        entry = CLIENT_METHODS[spec.method]
        assert inspect.iscoroutinefunction(getattr(ClientHandlers, entry.name)), spec.method


def test_stability_agrees_with_the_stable_schema() -> None:
    """A method is on the plain API exactly when the published stable schema has it."""
    stable = _stable_methods()
    for spec in _specs():
        if spec.method in HANDLED_BY_CONNECTION or spec.side in OUT_OF_SCOPE_SIDES:
            continue
        assert spec.method in (AGENT_METHODS if spec.side == "agent" else CLIENT_METHODS)
        assert is_unstable(spec) == (spec.method not in stable), spec.method


def test_the_tables_name_no_method_the_schema_lacks() -> None:
    """Every method the API tables place exists in the published unstable schema (a table
    entry for elicitation/create waits for the generated table to list it)."""
    table = method_table(2)
    spec_path = spec_dir("acp/v2/schema.unstable.json")
    defs = json.loads(spec_path.read_text(encoding="utf-8"))["$defs"]
    published = {d["x-method"] for d in defs.values() if isinstance(d, dict) and "x-method" in d}
    for method in [*AGENT_METHODS, *CLIENT_METHODS]:
        assert method in published, method
    known = set(table.requests) | set(table.notifications)
    assert set(AGENT_METHODS) <= known
    assert set(CLIENT_METHODS) - known <= {"elicitation/create"}
