"""What is missing skips only the tests that need it, one line says so, and
``AGENTPROTO_REQUIRE_ALL=1`` turns those skips into failures (tests/needs.py).

Each case runs a small pytest session in a subprocess, with this suite's conftest as
its plugin, no spec mirror, an empty download cache and downloads that fail (a stand-in
for a machine without network: nothing here reaches one).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import REQUIRE_ALL

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
from pathlib import Path

import codegen.sources as sources

pytest_plugins = ["tests.conftest"]

sources.CACHE = Path(__file__).parent / "empty-cache"


def offline(pins, **_):
    return [(pin, None, "cannot reach upstream.invalid: offline") for pin in pins]


sources.download = offline
"""

TESTS = """
import pytest

from codegen.sources import load_sources, read_source
from tests.needs import need_node, spec_dir, spec_params


@pytest.mark.spec("jsonpatch-tests")
def test_marked():
    pass


def test_asks_for_a_folder():
    spec_dir("agui/draft/fixtures")


def test_reads_a_schema():
    read_source(load_sources()[0]["agui-draft"])


@pytest.mark.parametrize("case", spec_params(lambda root: [1, 2], "agui/1.1"))
def test_parametrized(case):
    pass


def test_needs_node(monkeypatch):
    monkeypatch.setenv("PATH", "")
    need_node()


def test_needs_nothing():
    pass
"""


def _session(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (tmp_path / "test_tiny.py").write_text(TESTS, encoding="utf-8")
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "sdk")])}
    environ["AGENTPROTO_SPEC_MIRROR"] = str(tmp_path / "no-mirror")
    environ.pop("AGENTPROTO_REQUIRE_ALL", None)
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rsfE", "test_tiny.py"],
        cwd=tmp_path,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _closing_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def test_missing_needs_skip_only_their_tests_and_one_line_says_what(tmp_path: Path) -> None:
    """Without spec material or Node.js, exactly the tests needing them skip (asked for
    by marker, by call, by parameters or by a schema read), the rest pass, and one line
    names each need, its count, why and how to provide it."""
    result = _session(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 5 skipped" in _closing_line(result.stdout), result.stdout
    lines = [line for line in result.stdout.splitlines() if line.startswith("agentproto:")]
    assert len(lines) == 1, result.stdout
    line = lines[0]
    assert "4 tests skipped for want of spec material (cannot reach upstream.invalid" in line
    assert "AGENTPROTO_SPEC_MIRROR" in line
    assert "1 tests skipped for want of Node.js (node and npm not on PATH)" in line
    assert "AGENTPROTO_REQUIRE_ALL=1" in line


@pytest.mark.parametrize("value", ["1", "yes"])
def test_require_all_turns_every_such_skip_into_a_failure(tmp_path: Path, value: str) -> None:
    """With ``AGENTPROTO_REQUIRE_ALL`` set, the same session fails: every test that would
    have skipped for a missing need fails or errors instead, none is skipped."""
    result = _session(tmp_path, AGENTPROTO_REQUIRE_ALL=value)
    assert result.returncode == 1, result.stdout + result.stderr
    closing = _closing_line(result.stdout)
    assert "skipped" not in closing, closing
    assert "1 passed" in closing, closing
    failed = {
        line.split()[1]
        for line in result.stdout.splitlines()
        if line.startswith(("FAILED", "ERROR"))
    }
    assert failed == {
        "test_tiny.py::test_marked",
        "test_tiny.py::test_asks_for_a_folder",
        "test_tiny.py::test_reads_a_schema",
        "test_tiny.py::test_parametrized[spec-missing]",
        "test_tiny.py::test_needs_node",
    }, result.stdout
    assert result.stdout.count(f"{REQUIRE_ALL}=1 turns this skip into a failure") >= 5


def test_require_all_off_by_zero(tmp_path: Path) -> None:
    """``AGENTPROTO_REQUIRE_ALL=0`` (or empty) leaves the skips skips."""
    result = _session(tmp_path, AGENTPROTO_REQUIRE_ALL="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 5 skipped" in _closing_line(result.stdout)
