"""The library's loggers stay quiet in an application that configured no logging: every one
sits below ``agentproto``, which carries a ``NullHandler``, so its records never reach
logging's last resort (stderr). An application that configures logging gets them all."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

WARN = """
import logging, sys

import agentproto
from agentproto.agui import parse_capabilities

if sys.argv[1] == "configured":
    logging.basicConfig(format="%(name)s: %(message)s")
# the library's own warnings: a diagnostic logged, an unknown capability group stripped
agentproto.log_diagnostics([agentproto.Diagnostic(code="test.code", message="tolerated")])
parse_capabilities({"voice": {"duplex": True}})
# and one record on each logger the library uses
for name in sys.argv[2:]:
    logging.getLogger(name).warning("a warning on %s", name)
    logging.getLogger(name).error("an error on %s", name)
print("done")
"""


def _logger_names() -> set[str]:
    """The names given to ``logging.getLogger`` anywhere in the package's sources."""
    names = set()
    for path in (ROOT / "sdk" / "agentproto").rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if "getLogger" not in source:  # spares parsing the large generated modules
            continue
        for node in ast.walk(ast.parse(source)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "getLogger"
            ):
                (name,) = node.args
                assert isinstance(name, ast.Constant) and isinstance(name.value, str), path
                names.add(name.value)
    return names


def _run(mode: str, names: set[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "sdk")}
    return subprocess.run(
        [sys.executable, "-c", WARN, mode, *sorted(names)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_every_logger_of_the_library_is_below_agentproto() -> None:
    names = _logger_names()
    assert {"agentproto", "agentproto.agui", "agentproto.acp"} <= names
    assert [n for n in names if n != "agentproto" and not n.startswith("agentproto.")] == []


def test_without_logging_configured_nothing_reaches_stderr() -> None:
    """Warnings and errors of every library logger, the library's own included, print
    nothing when the application configured no logging."""
    done = _run("unconfigured", _logger_names())
    assert done.returncode == 0, done.stderr
    assert (done.stdout, done.stderr) == ("done\n", "")


def test_an_application_that_configures_logging_gets_the_records() -> None:
    """The NullHandler hides nothing from a configured application (so the test above is
    not vacuous)."""
    names = _logger_names()
    done = _run("configured", names)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert "agentproto: [test.code] tolerated" in lines
    assert any(line.startswith("agentproto.agui: ") and "/voice" in line for line in lines)
    for name in names:
        assert f"{name}: a warning on {name}" in lines
        assert f"{name}: an error on {name}" in lines
