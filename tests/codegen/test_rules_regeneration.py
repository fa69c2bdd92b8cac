"""The code generator fixes a stale sealed rules module even though the runtime it
imports refuses that module (here, not in tests/acp: it runs the code generator, which
the compiled-build session does not install)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from agentproto.acp import schema
from agentproto.acp._state import _generated_rules_v2 as sealed
from tests.needs import spec_dir, spec_root

ROOT = Path(__file__).resolve().parents[2]


def test_a_stale_sealed_module_does_not_stop_its_regeneration(tmp_path: Path) -> None:
    """With a stale sealed rules module the runtime refuses to import, and ``python -m
    codegen`` still runs and writes the module that fixes it."""
    for folder in ("codegen", "schema", "sdk"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copyfile(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    rules_file = tmp_path / "sdk" / "agentproto" / "acp" / "_state" / "_generated_rules_v2.py"
    fresh = rules_file.read_text(encoding="utf-8")
    stale = fresh.replace(f'"{sealed.SOURCE_SHA256[schema.ToolCallUpdate]}"', '"' + "0" * 64 + '"')
    assert stale != fresh
    rules_file.write_text(stale, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(tmp_path / "sdk"),
        "AGENTPROTO_SPEC_MIRROR": str(spec_root("acp/")),
        "PYTHONDONTWRITEBYTECODE": "1",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )

    refused = run("-c", "import agentproto.acp")
    assert refused.returncode != 0
    assert "ImportError" in refused.stderr and "python -m codegen" in refused.stderr
    regenerated = run("-m", "codegen", "--acp", str(spec_dir("acp/v2/schema.unstable.json")))
    assert regenerated.returncode == 0, regenerated.stderr
    assert rules_file.read_text(encoding="utf-8").split("\n", 1)[1] == fresh.split("\n", 1)[1]
    assert run("-c", "import agentproto.acp").returncode == 0
