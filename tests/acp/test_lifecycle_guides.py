"""The ACP agent and client quickstarts of the guides run as written, together."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docblocks import doc_block

ROOT = Path(__file__).parents[2]
AGENT = ("docs/guides/acp-agents.md", "ACP agents: serve a session")
CLIENT = ("docs/guides/acp-clients.md", "ACP clients: drive an agent")


def test_the_quickstarts_run_as_written(tmp_path: Path) -> None:
    """The agent block saved as echo_agent.py and the client block, which spawns it, run
    as written and print the documented result."""
    (tmp_path / "echo_agent.py").write_text(doc_block(*AGENT), encoding="utf-8")
    (tmp_path / "client.py").write_text(doc_block(*CLIENT), encoding="utf-8")
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
