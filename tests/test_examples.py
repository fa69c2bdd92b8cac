"""The runnable examples in ``examples/`` (outside the wheel) use only the public API, and
the demo ``nox -s demo`` runs works as a script."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def _agentproto_imports(path: Path) -> list[str]:
    """Every ``agentproto`` module ``path`` imports (``from X import name`` counts X and X.name)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return [name for name in found if name.split(".")[0] == "agentproto"]


def test_the_examples_are_found() -> None:
    """The examples folder holds the two small agents, the demo, the ACP client and the
    scripted AG-UI agent."""
    assert [p.name for p in EXAMPLES] == [
        "acp_client.py",
        "acp_hello_agent.py",
        "agui_hello_agent.py",
        "agui_scripted_agent.py",
        "demo.py",
    ]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_an_example_imports_only_public_names(path: Path) -> None:
    """No example imports a private module or name of agentproto (one with a leading
    underscore) or the CLI's modules."""
    imports = _agentproto_imports(path)
    assert imports, f"{path.name} does not use agentproto"
    private = [n for n in imports if any(p.startswith("_") for p in n.split("."))]
    assert private == []
    assert [n for n in imports if n.startswith("agentproto.cli")] == []


def test_the_demo_runs_as_a_script() -> None:
    """``python examples/demo.py`` runs the AG-UI agent through HttpAgent and an ACP turn
    through AcpClient over stdio, printing what each side saw; it exits 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    agui, _, acp = done.stdout.partition("== ACP")
    # the AG-UI run, event by event, and what the client folded from it
    assert "client got RUN_STARTED" in agui and "client got RUN_FINISHED" in agui
    assert "'Hello from the example agent.'" in agui and "get_weather" in agui
    assert '"runs": 1' in agui
    # the ACP turn: the client's side, then the agent's
    assert "client asked: 'Edit hello.py?'; answering allow" in acp
    assert "client applied tool_call_update" in acp
    assert "the turn ended: end_turn" in acp
    assert "agent saw: prompt 'Add a greeting'" in acp
    assert "agent saw: permission answer: allowed" in acp
