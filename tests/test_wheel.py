"""The wheel holds the package with the CLI's bundled recordings, never the examples (which
stay in ``examples/``, outside it); the CLI's bundled examples work from the wheel alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import hatchling.build
import pytest

ROOT = Path(__file__).resolve().parents[1]
CLI_DATA = ("agentproto/cli/data/agui_run.sse", "agentproto/cli/data/acp_session.ndjson")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A pure-Python wheel of the project, built once for this module."""
    out = tmp_path_factory.mktemp("wheel")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(ROOT)
        patch.setenv("AGENTPROTO_COMPILE", "0")  # the file list is what matters, not speed
        yield out / hatchling.build.build_wheel(str(out))


def test_the_wheel_has_the_cli_data_and_no_examples(wheel: Path) -> None:
    """No file of the wheel sits in an ``examples`` folder or is an example; the CLI's data
    files and the agent of ``acp serve-example`` are in it."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    examples = {path.name for path in (ROOT / "examples").glob("*.py")}
    assert examples, "the examples folder is empty: the check would be vacuous"
    assert [n for n in names if "examples" in n.split("/")[:-1]] == []
    assert [n for n in names if n.rsplit("/", 1)[-1] in examples] == []
    assert [n for n in CLI_DATA if n not in names] == []
    assert "agentproto/cli/acp_agent.py" in names


def test_the_cli_examples_work_from_the_wheel_alone(wheel: Path, tmp_path: Path) -> None:
    """Unpacked on its own (no source tree on the path), the wheel's CLI replays its
    bundled AG-UI and ACP recordings."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    script = (
        "import json, sys, agentproto\n"
        "from agentproto.cli import main\n"
        "print(json.dumps(agentproto.__file__))\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    for command in (["replay", "--json"], ["acp", "replay", "--json"]):
        done = subprocess.run(
            [sys.executable, "-c", script, *command],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        where, result = done.stdout.splitlines()[:2]
        assert Path(json.loads(where)).is_relative_to(site)
        document = json.loads(result)
        if command[0] == "replay":
            assert document["error"] is None and document["events"] > 0
        else:
            assert list(document["sessions"]) == ["sess_1"]
