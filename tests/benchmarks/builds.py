"""The two builds of agentproto: which modules the compiled build compiles, which build is
imported, and the benchmark run of the compiled build beside the pure one.

The list of compiled modules lives in ``pyproject.toml``
(``[tool.hatch.build.targets.wheel.hooks.custom] compile``, read by ``hatch_build.py``);
everything here reads it from there.

``nox -s bench`` installs the compiled wheel into a folder of its own (``--target``) and
passes it as ``--compiled-site``: the harness measures the build it runs on (the editable,
pure one), then runs itself once more in a child process with that folder first on
``PYTHONPATH``, which imports the compiled modules, and shows both runs side by side.
Each run times ours and the peer in alternation within its own process, so each run's
ratios are as sound as ever; the two runs are taken one after the other.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import os
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["build_of", "child_argv", "compiled_modules", "run_compiled", "side_by_side"]


def compiled_modules() -> list[str]:
    """The dotted names of the modules the compiled build compiles."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    modules: list[str] = config["tool"]["hatch"]["build"]["targets"]["wheel"]["hooks"]["custom"][
        "compile"
    ]
    return modules


def _is_extension(path: str | None) -> bool:
    return path is not None and path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def build_of(modules: Sequence[str] | None = None) -> str:
    """``"compiled"`` when every listed module imports as a C extension, ``"pure"`` when
    none does, else ``"mixed"`` followed by the compiled ones."""
    names = list(compiled_modules() if modules is None else modules)
    compiled = [n for n in names if _is_extension(importlib.import_module(n).__file__)]
    if not compiled:
        return "pure"
    if len(compiled) == len(names):
        return "compiled"
    return f"mixed ({', '.join(compiled)} compiled)"


def child_argv(argv: Sequence[str]) -> list[str]:
    """The harness's arguments without ``--compiled-site`` and ``--json`` (and their values)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--compiled-site", "--json"):
            skip = True
        elif not arg.startswith(("--compiled-site=", "--json=")):
            out.append(arg)
    return out


def run_compiled(site: Path, argv: Sequence[str]) -> tuple[list[dict[str, Any]], int]:
    """Run the harness again on the compiled build installed in ``site``.

    Returns the figures it wrote (each a ``to_json()`` dict) and its exit status; the
    child's own output is shown as it runs. A child that did not import the compiled
    build is an error, never reported as its figures.
    """
    with tempfile.TemporaryDirectory(prefix="agentproto-bench-") as tmp:
        out = Path(tmp) / "compiled.json"
        path = os.pathsep.join(p for p in (str(site), str(ROOT), os.environ.get("PYTHONPATH")) if p)
        env = {**os.environ, "PYTHONPATH": path}
        cmd = [sys.executable, "-m", "tests.benchmarks.bench", *argv, "--json", str(out)]
        status = subprocess.run(cmd, env=env, cwd=ROOT, check=False).returncode
        figures: list[dict[str, Any]] = orjson.loads(out.read_bytes()) if out.exists() else []
    wrong = {f["build"] for f in figures} - {"compiled"}
    if wrong:
        raise RuntimeError(f"the run on {site} measured the {', '.join(sorted(wrong))} build")
    return figures, status


def _gain(pure: dict[str, Any], compiled: dict[str, Any]) -> float | None:
    """How much better the compiled build does: ratio over ratio for a comparison (each
    against the peer timed in its own run), events/s over events/s for a throughput."""
    if pure["peer"] is not None and pure["ratio"] and compiled["ratio"]:
        return float(compiled["ratio"] / pure["ratio"])
    if pure["unit"] == "events/s":
        return float(compiled["ours"] / pure["ours"])
    return None


def _cell(x: float | None, unit: str) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if unit == "events/s" else f"{x:.3f}"


def _times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def side_by_side(pure: Sequence[dict[str, Any]], compiled: Sequence[dict[str, Any]]) -> str:
    """Both builds' figures, one line per figure: our cost in each build, the peer's (as
    timed in the pure run), each build's ratio, and the compiled build's gain."""
    head = (
        f"{'figure':<25} {'unit':<9} {'pure':>10} {'compiled':>10} {'peer':>10} "
        f"{'ratio':>8} {'ratio c.':>8} {'gain':>7}  better"
    )
    lines = [head, "-" * len(head)]
    by_name = {f["name"]: f for f in compiled}
    for p in pure:
        c = by_name.get(p["name"])
        ours_c, ratio_c, gain = (
            (None, None, None) if c is None else (c["ours"], c["ratio"], _gain(p, c))
        )
        unit = p["unit"]
        lines.append(
            f"{p['name']:<25} {unit:<9} {_cell(p['ours'], unit):>10} "
            f"{_cell(ours_c, unit):>10} {_cell(p['peer'], unit):>10} "
            f"{_times(p['ratio']):>8} {_times(ratio_c):>8} {_times(gain):>7}  {p['better']}"
        )
    return "\n".join(lines)
