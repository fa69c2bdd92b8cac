"""ACP v1 (the v1 schema, its loaders, the adapters, the bridge) is imported only when v1 is
used: ``import agentproto.acp`` and a v2 session leave it unloaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
V1_MODULES = ("agentproto.acp._generated_v1", "agentproto.acp._generated_loaders_v1")

SCRIPT = """
import asyncio, json, sys

V1 = ("agentproto.acp._generated_v1", "agentproto.acp._generated_loaders_v1")
V1_NAMES = ("V1ToV2Adapter", "V2ToV1Adapter", "schema_v1")

def loaded():
    return [name for name in V1 if name in sys.modules]

found = {}
import agentproto.acp as acp
found["after import"] = loaded()
found["dir lists"] = [name for name in V1_NAMES if name in dir(acp)]
found["in __all__"] = [name for name in V1_NAMES if name in acp.__all__]
found["after dir"] = loaded()

class Echo(acp.Agent):
    async def prompt(self, session, request):
        await session.message("hi")
        return "end_turn"

async def v2_session():
    to_agent, to_client = acp.MemoryPipe(), acp.MemoryPipe()
    runner = acp.AgentRunner(Echo(), to_agent, to_client)
    client = acp.AcpClient.connect(to_client, to_agent)
    serving = asyncio.create_task(runner.serve())
    async with client:
        answer = await client.initialize()
        session = await client.new_session("/w")
        stop = await client.prompt(session.session_id, "hello")
    await runner.close()
    await serving
    return answer.protocol_version, stop

found["v2 session"] = list(asyncio.run(v2_session()))
found["after a v2 session"] = loaded()
found["hasattr"] = [hasattr(acp, name) for name in V1_NAMES]
found["schema_v1"] = acp.schema_v1.__name__
found["adapter module"] = acp.V1ToV2Adapter.__module__
found["after use"] = loaded()
print(json.dumps(found))
"""


def _run() -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def test_v1_is_loaded_only_when_used() -> None:
    """In a fresh process ``import agentproto.acp``, ``dir()`` and a whole v2 session load
    neither the v1 schema nor its loaders; ``hasattr`` and ``dir()`` still list the lazy v1
    names, and using one (``agentproto.acp.schema_v1``) loads both."""
    found = _run()
    names = ["V1ToV2Adapter", "V2ToV1Adapter", "schema_v1"]
    assert found["after import"] == []
    assert found["dir lists"] == names
    assert found["in __all__"] == names
    assert found["after dir"] == []
    assert found["v2 session"] == [2, "end_turn"]
    assert found["after a v2 session"] == []
    assert found["hasattr"] == [True, True, True]
    assert found["schema_v1"] == "agentproto.acp.schema_v1"
    assert found["adapter module"] == "agentproto.acp"
    assert found["after use"] == list(V1_MODULES)
