"""Interop with the official Python SDK, agent-client-protocol 0.12.1 (ACP v1 only).

agentproto's client drives an agent written with that SDK (``initialize``
negotiates version 1), and that SDK's client drives agentproto's agent, each over
a real subprocess and its stdio, through the v1 form of the scenario (see
``acp_peers/py_agent.py`` and ``acp_peers/py_client.py``): a turn with a plan, a
permission and a diff, a turn cancelled while its permission request is pending,
``session/close`` and ``session/load`` with its replay (the SDK has no
``$/cancel_request``: it neither sends one nor routes ours). agentproto speaks v2 to
the application and v1 on the wire, through the lifecycle API's own v1 mode
(``tests/interop/acp_side.py``).

Each side's view is compared; every difference between a v1 view and a v2 view is
made explicit below with the rule behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import agentproto
from agentproto.acp import AcpClient, RpcError
from tests.agui.live_server import serve
from tests.interop.acp_side import METHODS as SCENARIO_METHODS
from tests.interop.acp_side import (
    PEERS,
    PERMISSIONS,
    SCENARIO,
    STOP_REASONS,
    ScenarioClient,
    ScenarioHandlers,
    ServedAgents,
    drive_agent,
)
from tests.needs import PEERS as PEER_PACKAGES
from tests.needs import missing

ROOT = Path(__file__).resolve().parents[2]
UNDER_TEST = str(Path(agentproto.__file__).resolve())  # the spawned agent must run this one
METHODS = [*SCENARIO_METHODS, "session/load"]


def _require_sdk() -> None:
    if importlib.util.find_spec("acp") is None:
        missing(PEER_PACKAGES, "the Python package agent-client-protocol is not installed")


def _without_ids(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # v1 message chunks carry no messageId: the SDK's view has none, and agentproto's
    # adapter names each run of chunks itself ("v1-1", ...)
    return [{"kind": m["kind"], "text": m["text"]} for m in messages]


TRANSPORTS = ["stdio", "http", "ws"]
"""The SDK's client runs over stdio, and over its remote transport (``acp.http``:
Streamable HTTP, and a WebSocket) against ``acp_app``."""


@pytest.fixture(scope="module")
def python_agent(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], ...]:
    """agentproto's client against the SDK's agent: (our report, the agent's report)."""
    _require_sdk()
    path = tmp_path_factory.mktemp("py-agent") / "agent.json"
    command = [sys.executable, str(PEERS / "py_agent.py"), str(path)]
    ours, protocol = asyncio.run(drive_agent(command))
    assert protocol == 1
    return ours, json.loads(path.read_text("utf-8"))


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_agentproto_client_drives_the_sdk_remote_server(tmp_path: Path, transport: str) -> None:
    """``AcpClient.connect_url`` against the SDK's own remote server (``acp.http``'s ASGI
    app: Streamable HTTP and WebSocket). That server serves the stable v1 methods only (it
    takes no ``use_unstable_protocol``), so ``session/close`` is answered ``-32601``, which
    the client reports; the turns before it agree with the agent's view as over stdio."""
    _require_sdk()
    path = tmp_path / "agent.json"
    command = [sys.executable, str(PEERS / "py_agent.py"), str(path), "--listen"]
    handlers = ScenarioHandlers()
    with _listening(command) as url:
        remote = url.replace("http", "ws", 1) if transport == "ws" else url

        async def drive() -> tuple[ScenarioClient, BaseException | None]:
            client = AcpClient.connect_url(remote, handlers, request_timeout=30)
            scenario = ScenarioClient(client, handlers)
            async with client:
                try:
                    await asyncio.wait_for(scenario.run(), 60)
                except RpcError as error:
                    return scenario, error
            return scenario, None

        scenario, error = asyncio.run(drive())
        time.sleep(0.3)  # the agent writes its view every 100 ms
    theirs = json.loads(path.read_text("utf-8"))
    ours = scenario.report()
    assert isinstance(error, RpcError) and error.code == -32601  # session/close, unstable
    assert theirs["methods"] == METHODS[: METHODS.index("session/close")]
    assert ours["errors"] == [] and theirs["errors"] == []
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    view, expected = copy.deepcopy(ours["view"]), copy.deepcopy(theirs["view"])
    view["messages"] = _without_ids(view["messages"])
    # as over stdio (test_agentproto_client_drives_python_agent): v1 has no cancelled
    # status nor state_update; the diff and plan are checked over stdio
    expected["toolCalls"]["c3"]["status"] = view["toolCalls"]["c3"]["status"] = "cancelled"
    expected["state"] = view["state"]
    for side in (view, expected):
        del side["plans"], side["toolCalls"]["c1"]["content"]
    assert view == expected


@contextlib.contextmanager
def _listening(command: list[str]) -> Iterator[str]:
    """A server process that prints ``LISTENING <port>``: its URL, while it runs."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("LISTENING "), line
        yield f"http://127.0.0.1:{line.split()[1]}/acp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.fixture(scope="module", params=TRANSPORTS)
def python_client(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], ...]:
    """The SDK's client against agentproto's agent: (its report, our agent's report)."""
    _require_sdk()
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    client = [sys.executable, str(PEERS / "py_client.py")]
    run = functools.partial(
        subprocess.run,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": env_path},
    )
    if request.param == "stdio":
        path = tmp_path_factory.mktemp("py-client") / "agent.json"
        result = run([*client, "--", sys.executable, "-m", "tests.interop.acp_side", str(path)])
        ours = json.loads(path.read_text("utf-8"))
    else:
        agents = ServedAgents()
        with serve(agents.app()) as url:
            result = run([*client, "--url", url + "/acp", "--transport", request.param])
        ours = agents.last_report()
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout) | {"stderr": result.stderr}
    if request.param != "stdio":
        assert theirs["agentExit"] is None  # no process of ours to exit: the server goes on
        theirs["agentExit"] = 0
    return theirs, ours


def test_agentproto_client_drives_python_agent(python_agent: tuple[dict[str, Any], ...]) -> None:
    """agentproto's client (v1 on the wire) and the SDK's v1 agent agree on the session."""
    ours, theirs = python_agent
    assert theirs["errors"] == [] and theirs["methods"] == METHODS
    # v1: the client answers the cancelled turn's pending permission request itself; the
    # SDK's agent (0.12.1) sends no $/cancel_request (it has no support for it)
    assert ours["errors"] == [] and ours["cancelRequests"] == []
    assert ours["permissions"] == theirs["permissions"] == PERMISSIONS
    assert ours["stopReasons"] == theirs["stopReasons"] == STOP_REASONS
    view, expected = copy.deepcopy(ours["view"]), copy.deepcopy(theirs["view"])
    view["messages"] = _without_ids(view["messages"])
    # v1 prompt turn, cancellation: the client marks the cancelled turn's unfinished tool
    # calls cancelled; the agent sends no final status (v1 has no `cancelled` status)
    assert view["toolCalls"]["c3"]["status"] == "cancelled"
    expected["toolCalls"]["c3"]["status"] = "cancelled"
    # v1 has no state_update (v2 prompt lifecycle: a turn ends with the idle state_update);
    # a v1 turn ends with the prompt response's stopReason, which the client's v1 mode
    # reports to the v2 application as that idle update: the last turn's, `cancelled`
    assert view["state"] == {"state": "idle", "stopReason": "cancelled"}
    expected["state"] = view["state"]
    # checked in test_agentproto_client_keeps_the_v1_diff_and_plan
    for side in (view, expected):
        del side["plans"], side["toolCalls"]["c1"]["content"]
    assert view == expected
    # the replay rebuilds what the agent sent; the client's own cancel mark is not in it
    replayed = copy.deepcopy(ours["replayed"])
    assert replayed["toolCalls"]["c3"]["status"] == "in_progress"
    replayed["toolCalls"]["c3"]["status"] = "cancelled"
    assert replayed == ours["view"]


def test_agentproto_client_keeps_the_v1_diff_and_plan(
    python_agent: tuple[dict[str, Any], ...],
) -> None:
    """A v1 diff reaches the v2 state as a diff, and the v1 plan becomes the plan `main`."""
    ours, theirs = python_agent
    assert ours["view"]["toolCalls"]["c1"]["content"] == [
        {"type": "diff", "paths": ["/tmp/agentproto-interop/main.py"]}
    ]
    assert ours["view"]["plans"] == theirs["view"]["plans"]
    assert ours["diagnostics"] == []


def _scenario_patch() -> str:
    """The patch text of the scenario's one v2 diff."""
    found = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("format") == "git_patch":
                found.append(value["text"])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads((PEERS / "scenario.json").read_text("utf-8")))
    (patch,) = found
    return str(patch)


def _as_v1_sees_it(view: dict[str, Any]) -> dict[str, Any]:
    """What a v1 client can hold of agentproto's v2 view, each loss with its rule."""
    out = copy.deepcopy(view)
    out["messages"] = _without_ids(out["messages"])
    # v1 has no agent-owned terminals (v2 terminal-output RFD; v1 terminals are the
    # client's terminal/* methods) and no state_update (v2 prompt lifecycle; v1 ends a turn
    # with the prompt response's stopReason, compared on its own)
    out["terminals"], out["state"] = {}, None
    # a v2 diff whose patch does not show every file whole has no v1 Diff form (v1's Diff
    # needs the whole new text): the adapter sends the patch as text, with a diagnostic
    out["toolCalls"]["c1"]["content"] = [{"type": "text", "text": _scenario_patch()}]
    # v1's ToolCallStatus has no `cancelled`; the adapter sends `failed` (documented loss)
    out["toolCalls"]["c3"]["status"] = "failed"
    return out


def test_python_client_drives_agentproto_agent(python_client: tuple[dict[str, Any], ...]) -> None:
    """The SDK's v1 client and agentproto's agent (v2 app, v1 wire) agree on the session."""
    theirs, ours = python_client
    assert theirs["error"] is None and theirs["agentExit"] == 0
    assert theirs["initialize"]["protocolVersion"] == 1
    assert ours["agentproto"] == UNDER_TEST
    assert ours["errors"] == [] and ours["methods"] == METHODS
    assert theirs["permissions"] == ours["permissions"] == PERMISSIONS
    assert theirs["stopReasons"] == ours["stopReasons"] == STOP_REASONS
    expected, view = _as_v1_sees_it(ours["view"]), copy.deepcopy(theirs["view"])
    # checked in test_agentproto_agent_withholds_what_v1_cannot_show
    for side in (view, expected):
        del side["plans"], side["unhandled"], side["toolCalls"]["c2"]["content"]
    assert view == expected
    assert theirs["replayed"] == theirs["view"]


def test_agentproto_agent_withholds_what_v1_cannot_show(
    python_client: tuple[dict[str, Any], ...],
) -> None:
    """The v1 client gets the plan as a v1 `plan`, and no terminal it never created: the
    stateful adapter shows the terminal as its output so far, as text (v2 terminal RFD)."""
    theirs, ours = python_client
    assert theirs["view"]["plans"] == ours["view"]["plans"]
    assert theirs["view"]["unhandled"] == []
    output = ours["view"]["terminals"]["t1"]["output"]
    assert theirs["view"]["toolCalls"]["c2"]["content"] == [{"type": "text", "text": output}]


# the documented loss of the scenario's diff (see _as_v1_sees_it), as the agent reports it
DIFF_LOSS = (
    "lossy-conversion: a v2 diff v1 cannot show as diffs of whole files (a delete, move or "
    "copy, a patch without the whole file, or no patch) is sent as text content"
)


def test_agentproto_agent_reports_the_v1_diff_loss(
    python_client: tuple[dict[str, Any], ...],
) -> None:
    """Each time the diff is sent as text to the v1 client (live, and in the session/load
    replay), the agent reports the loss."""
    _, ours = python_client
    assert ours["diagnostics"].count(DIFF_LOSS) == 2


def _permission_losses() -> list[str]:
    """The scenario's permission titles, which differ from their tool calls' titles: a v1
    permission request has no title of its own (a v1 client shows the tool call's)."""
    steps = [step for turn in SCENARIO["turns"].values() for step in turn]
    return [
        "v1.permission-lossy: a v1 permission request has no place for title "
        f"{step['ask']['title']!r}: not sent (v1 shows the tool call's title)"
        for step in steps
        if "ask" in step
    ]


def test_agentproto_agent_reports_only_real_v1_losses(
    python_client: tuple[dict[str, Any], ...],
) -> None:
    """The agent's diagnostics to a v1 client are the documented losses, nothing more."""
    _, ours = python_client
    permission_c1, permission_c3 = _permission_losses()
    assert ours["diagnostics"] == [permission_c1, DIFF_LOSS, permission_c3, DIFF_LOSS]


def test_agentproto_agent_cancels_the_permission_request_the_sdk_ignores(
    python_client: tuple[dict[str, Any], ...],
) -> None:
    """On session/cancel agentproto's agent cancels its pending permission request with
    $/cancel_request, which the v1 schema defines too; the SDK's client (0.12.1) routes no
    `$/` method and logs it as unhandled (the schema lets a receiver ignore `$/`
    notifications), and answers the request `cancelled` itself, as v1 asks."""
    theirs, ours = python_client
    assert (
        "Unhandled error while handling notification method=$/cancel_request" in (theirs["stderr"])
    )
    assert theirs["permissions"][-1] == ours["permissions"][-1] == PERMISSIONS[-1]
