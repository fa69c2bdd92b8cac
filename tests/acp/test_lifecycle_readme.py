"""The README's ACP agent and client quickstarts run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]
SECTION = "### ACP agents and clients"


def _blocks() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n### ", start + len(SECTION))
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_the_quickstarts_run_as_written(tmp_path: Path) -> None:
    """The agent block saved as echo_agent.py and the client block run against it print
    the documented result."""
    agent, client = _blocks()
    (tmp_path / "echo_agent.py").write_text(agent, encoding="utf-8")
    (tmp_path / "client.py").write_text(client, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'sdk'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
    }
    done = subprocess.run(
        [sys.executable, "client.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "end_turn ['completed']"
