"""Optional dependencies (httpx for the HTTP clients, Starlette and FastAPI for the route
helpers) never break importing: without them ``import *``, ``hasattr`` and ``dir()`` work,
and using the feature raises ``MissingDependencyError`` naming what to install."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import agentproto
import agentproto.agui
from agentproto.agui._http import client as http_client

ROOT = Path(__file__).resolve().parents[2]

WITHOUT = """
import json, sys

for name in ("httpx", "starlette", "fastapi"):
    sys.modules[name] = None  # each import of it raises ModuleNotFoundError

import agentproto, agentproto.agui, agentproto.acp

namespace = {}
exec("from agentproto.agui import *", namespace)
found = {
    "star": sorted(name for name in agentproto.agui.__all__ if name not in namespace),
    "hasattr": [hasattr(agentproto.agui, n) for n in ("HttpAgent", "AsyncHttpAgent")],
    "dir": sorted({"HttpAgent", "AsyncHttpAgent"} - set(dir(agentproto.agui))),
    "unknown": hasattr(agentproto.agui, "NoSuchName"),
    "same": namespace["HttpAgent"] is agentproto.agui.HttpAgent,
    "repr": repr(agentproto.agui.HttpAgent),
    "errors": [],
}
uses = [
    lambda: agentproto.agui.HttpAgent("http://127.0.0.1:1/agent"),
    lambda: agentproto.agui.AsyncHttpAgent("http://127.0.0.1:1/agent"),
    lambda: type("Mine", (agentproto.agui.HttpAgent,), {}),
    lambda: agentproto.agui.agent_route("/agent", None),
    lambda: agentproto.agui.agent_api_route("/agent", None),
    lambda: agentproto.agui.agent_router(None),
]
for use in uses:
    try:
        use()
    except agentproto.MissingDependencyError as exc:
        found["errors"].append([type(exc).__name__, isinstance(exc, ImportError), exc.name,
                                exc.feature, exc.install, str(exc)])
    else:
        found["errors"].append(None)
found["loaded"] = sorted(n for n in ("httpx", "starlette", "fastapi") if sys.modules.get(n))
print(json.dumps(found))
"""


def _without_optional_dependencies() -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_without_optional_dependencies_the_names_import_and_use_raises() -> None:
    """Without httpx, Starlette and FastAPI, ``from agentproto.agui import *``, ``hasattr``
    and ``dir()`` see every public name; calling a feature that needs one raises
    MissingDependencyError (an ImportError) naming the module and the install command."""
    found = _without_optional_dependencies()
    assert found["star"] == []
    assert found["hasattr"] == [True, True]
    assert found["dir"] == []
    assert found["unknown"] is False
    assert found["same"] is True
    assert found["repr"] == "<class 'agentproto.agui.HttpAgent'>"
    http = "pip install 'agentproto[http]'"
    starlette = "pip install 'agentproto[starlette]'"
    fastapi = "pip install 'agentproto[fastapi]'"
    assert found["errors"] == [
        [
            "MissingDependencyError",
            True,
            "httpx",
            "agentproto.agui.HttpAgent",
            http,
            f"agentproto.agui.HttpAgent needs httpx: {http}",
        ],
        [
            "MissingDependencyError",
            True,
            "httpx",
            "agentproto.agui.AsyncHttpAgent",
            http,
            f"agentproto.agui.AsyncHttpAgent needs httpx: {http}",
        ],
        [
            "MissingDependencyError",
            True,
            "httpx",
            "agentproto.agui.HttpAgent",
            http,
            f"agentproto.agui.HttpAgent needs httpx: {http}",
        ],
        [
            "MissingDependencyError",
            True,
            "starlette",
            "agentproto.agui.agent_route",
            starlette,
            f"agentproto.agui.agent_route needs starlette: {starlette}",
        ],
        [
            "MissingDependencyError",
            True,
            "fastapi",
            "agentproto.agui.agent_api_route",
            fastapi,
            f"agentproto.agui.agent_api_route needs fastapi: {fastapi}",
        ],
        [
            "MissingDependencyError",
            True,
            "fastapi",
            "agentproto.agui.agent_router",
            fastapi,
            f"agentproto.agui.agent_router needs fastapi: {fastapi}",
        ],
    ]
    assert found["loaded"] == []


def test_each_install_hint_names_an_extra_that_installs_the_missing_module() -> None:
    """The command each MissingDependencyError gives is ``pip install 'agentproto[X]'``
    for an extra X of ``pyproject.toml`` whose requirements include the missing module."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    errors = _without_optional_dependencies()["errors"]
    assert errors and None not in errors
    for _, _, module, feature, install, _ in errors:
        found = re.fullmatch(r"pip install 'agentproto\[([a-z]+)\]'", install)
        assert found is not None, f"{feature}: {install!r} names no extra"
        names = [re.split(r"[<>=!~;\[ ]", r, maxsplit=1)[0] for r in extras[found[1]]]
        assert module in names, f"{feature}: agentproto[{found[1]}] does not install {module}"


def test_with_httpx_the_names_are_the_real_classes() -> None:
    """With httpx installed the lazy names are the client classes themselves (isinstance
    and typing work), listed by ``dir()`` and exported by ``import *``."""
    namespace: dict[str, Any] = {}
    exec("from agentproto.agui import *", namespace)
    assert agentproto.agui.HttpAgent is http_client.HttpAgent is namespace["HttpAgent"]
    assert agentproto.agui.AsyncHttpAgent is http_client.AsyncHttpAgent
    assert agentproto.agui.HttpAgent.__module__ == "agentproto.agui"
    assert {"HttpAgent", "AsyncHttpAgent"} <= set(dir(agentproto.agui))
    with agentproto.agui.HttpAgent("http://127.0.0.1:1/agent") as agent:
        assert isinstance(agent, http_client.HttpAgent)


def test_missing_dependency_error_is_an_sdk_error_and_an_import_error() -> None:
    """MissingDependencyError is in the SDK's hierarchy and an ImportError, whose ``name``
    is the missing module."""
    error = agentproto.MissingDependencyError("x.Feature", "lib", "pip install lib")
    assert isinstance(error, agentproto.AgentProtoError) and isinstance(error, ImportError)
    assert (error.name, error.feature, error.install) == ("lib", "x.Feature", "pip install lib")
    assert str(error) == "x.Feature needs lib: pip install lib"
